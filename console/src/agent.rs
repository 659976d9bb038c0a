//! Terminal coding agents: the scripted demo agent (`valp demo-agent`).

pub mod demo;
pub mod demo_terminal;

//! Terminal coding agents: profiles of their screens as data, the classifier that reads a
//! screen with one, and the scripted demo agent (`valp demo-agent`).

pub mod classify;
pub mod command;
pub mod demo;
pub mod profile;

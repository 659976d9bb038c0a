//! Terminal coding agents: profiles of their screens as data, the classifier that reads a
//! screen with one, the scripted demo agent (`valp demo-agent`), and the agents' structured
//! channels (hooks, notify, streams: [`channel`]).

pub mod channel;
pub mod classify;
pub mod command;
pub mod demo;
pub mod overrides;
pub mod profile;

//! The operator console's terminal UI, driven without a terminal: key flows through
//! `App::handle` and `dispatch` against a scripted backend, and insta snapshots of every screen
//! rendered into ratatui's `TestBackend` at 120x40 and 80x24.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod agent;
mod agent_needs;
mod controls;
mod detail;
mod flow_views;
mod flows;
mod foreign;
mod navigation;
mod needs;
mod opening;
mod palette;
mod screens;
mod support;

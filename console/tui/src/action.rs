//! What a key asks the console to do: the one [`Action`] enum, named as in the keymap file.

/// A user intent, after the keymap resolved a key in the current mode.
///
/// Actions are UI intents; the requests they may lead to are [`valp_view::Request`]s, built by
/// the [`App`](super::App) from what is on screen, never by the keymap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Action {
    /// Leave the console.
    Quit,
    /// Re-run the Doctor and re-read the view.
    Refresh,
    /// Show or hide the help overlay.
    Help,
    /// Move the focus to the next pane (or dialog field).
    NextPane,
    /// Move the focus to the previous pane (or dialog field).
    PreviousPane,
    /// Move the cursor up.
    Up,
    /// Move the cursor down.
    Down,
    /// Open the confirmation dialog for the candidate under the cursor.
    Choose,
    /// Confirm the dialog: send its request (or, in the redirect dialog, review it).
    Confirm,
    /// Close the dialog, the help overlay or the candidate list.
    Cancel,
    /// Read-only: list new sessions of the bound principal.
    Rebind,
    /// Read-only: list every candidate but the bound session.
    SelectOther,
    /// Cancel the selected work item or task (asks to confirm).
    CancelSelected,
    /// Interrupt the selected task.
    Interrupt,
    /// Lift the selected task's interrupt.
    Resume,
    /// Redirect the selected task: type a new intent, mark superseded work items, confirm.
    Redirect,
    /// Pass the review of the selected task (asks to confirm).
    PassReview,
    /// Reject the review of the selected task (asks to confirm).
    RejectReview,
    /// Grant the approval the selected task waits for (asks to confirm).
    GrantApproval,
    /// Deny the approval the selected task waits for (asks to confirm).
    DenyApproval,
    /// Give the selected blocked work item a new attempt (asks to confirm).
    RetryItem,
    /// Move the selected blocked task to fixing, or dispatch a fixing one again (asks to
    /// confirm).
    Recover,
    /// Mark or unmark the work item under the cursor (redirect dialog).
    Toggle,
    /// Open the Agent pane of the selected work item's terminal agent.
    Agent,
    /// Agent pane: attach a terminal to the agent's pane.
    Attach,
    /// Agent pane: type a message for the running agent.
    Message,
    /// Agent pane: follow the screen's end again after scrolling.
    Follow,
    /// Jump to the next need that waits for the Leader: its task (and work item) selected,
    /// so the key that answers it acts on it.
    NextNeed,
    /// Acknowledge the need under the Needs-you cursor (or take the acknowledgement back).
    Acknowledge,
    /// Move the cursor a page up.
    PageUp,
    /// Move the cursor a page down.
    PageDown,
    /// Move the cursor to the first row.
    First,
    /// Move the cursor to the last row.
    Last,
    /// Open the `:` command palette.
    Palette,
    /// Open the `/` filter prompt.
    Filter,
    /// Complete the typed command to the chosen palette entry.
    Complete,
    /// Open the detail view of the selected row.
    Details,
    /// Show the protocol state machine of the selected task (or work item).
    StateMachine,
    /// Allow the selected terminal agent's pending permission request (asks to confirm).
    AllowRequest,
    /// Deny the selected terminal agent's pending permission request (asks to confirm).
    DenyRequest,
}

impl Action {
    /// Every action, in the order help lists them.
    pub const ALL: [Self; 40] = [
        Self::Quit,
        Self::Refresh,
        Self::Help,
        Self::NextPane,
        Self::PreviousPane,
        Self::Up,
        Self::Down,
        Self::Choose,
        Self::Confirm,
        Self::Cancel,
        Self::Rebind,
        Self::SelectOther,
        Self::CancelSelected,
        Self::Interrupt,
        Self::Resume,
        Self::Redirect,
        Self::PassReview,
        Self::RejectReview,
        Self::GrantApproval,
        Self::DenyApproval,
        Self::RetryItem,
        Self::Recover,
        Self::Toggle,
        Self::Agent,
        Self::Attach,
        Self::Message,
        Self::Follow,
        Self::NextNeed,
        Self::Acknowledge,
        Self::PageUp,
        Self::PageDown,
        Self::First,
        Self::Last,
        Self::Palette,
        Self::Filter,
        Self::Complete,
        Self::Details,
        Self::StateMachine,
        Self::AllowRequest,
        Self::DenyRequest,
    ];

    /// The name used in keymap files.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Quit => "quit",
            Self::Refresh => "refresh",
            Self::Help => "help",
            Self::NextPane => "next_pane",
            Self::PreviousPane => "previous_pane",
            Self::Up => "up",
            Self::Down => "down",
            Self::Choose => "choose",
            Self::Confirm => "confirm",
            Self::Cancel => "cancel",
            Self::Rebind => "rebind",
            Self::SelectOther => "select_other",
            Self::CancelSelected => "cancel_selected",
            Self::Interrupt => "interrupt",
            Self::Resume => "resume",
            Self::Redirect => "redirect",
            Self::PassReview => "pass_review",
            Self::RejectReview => "reject_review",
            Self::GrantApproval => "grant_approval",
            Self::DenyApproval => "deny_approval",
            Self::RetryItem => "retry_item",
            Self::Recover => "recover",
            Self::Toggle => "toggle",
            Self::Agent => "agent",
            Self::Attach => "attach",
            Self::Message => "message",
            Self::Follow => "follow",
            Self::NextNeed => "next_need",
            Self::Acknowledge => "acknowledge",
            Self::PageUp => "page_up",
            Self::PageDown => "page_down",
            Self::First => "first",
            Self::Last => "last",
            Self::Palette => "palette",
            Self::Filter => "filter",
            Self::Complete => "complete",
            Self::Details => "details",
            Self::StateMachine => "state_machine",
            Self::AllowRequest => "allow_request",
            Self::DenyRequest => "deny_request",
        }
    }

    /// The action a keymap file names, if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|action| action.name() == name)
    }

    /// A word or two for the footer.
    pub const fn label(self) -> &'static str {
        match self {
            Self::Quit => "quit",
            Self::Refresh => "refresh",
            Self::Help => "help",
            Self::NextPane => "focus",
            Self::PreviousPane => "focus back",
            Self::Up => "up",
            Self::Down => "down",
            Self::Choose => "choose",
            Self::Confirm => "confirm",
            Self::Cancel => "cancel",
            Self::Rebind => "rebind",
            Self::SelectOther => "select another",
            Self::CancelSelected => "cancel…",
            Self::Interrupt => "interrupt",
            Self::Resume => "resume",
            Self::Redirect => "redirect…",
            Self::PassReview => "pass review…",
            Self::RejectReview => "reject review…",
            Self::GrantApproval => "grant approval…",
            Self::DenyApproval => "deny approval…",
            Self::RetryItem => "retry…",
            Self::Recover => "recover…",
            Self::Toggle => "mark superseded",
            Self::Agent => "agent",
            Self::Attach => "attach",
            Self::Message => "message…",
            Self::Follow => "follow",
            Self::NextNeed => "next need",
            Self::Acknowledge => "seen",
            Self::PageUp => "page up",
            Self::PageDown => "page down",
            Self::First => "first",
            Self::Last => "last",
            Self::Palette => "commands",
            Self::Filter => "filter",
            Self::Complete => "complete",
            Self::Details => "details",
            Self::StateMachine => "state machine",
            Self::AllowRequest => "allow agent…",
            Self::DenyRequest => "deny agent…",
        }
    }

    /// Whether the footer lists the action (help always does): not the second of a pair, the
    /// page keys or Enter (the footer's row is worth more to the task keys).
    pub const fn hinted(self) -> bool {
        !matches!(
            self,
            Self::PreviousPane
                | Self::PageUp
                | Self::PageDown
                | Self::First
                | Self::Last
                | Self::Details
        )
    }

    /// A sentence for the help overlay and the read-only banner.
    pub const fn describe(self) -> &'static str {
        match self {
            Self::Quit => "quit the console",
            Self::Refresh => "observe the sessions again and refresh",
            Self::Help => "show this help",
            Self::NextPane => "focus the next pane (or field)",
            Self::PreviousPane => "focus the previous pane (or field)",
            Self::Up => "move the cursor up",
            Self::Down => "move the cursor down",
            Self::Choose => "choose the candidate under the cursor (asks to confirm)",
            Self::Confirm => "confirm",
            Self::Cancel => "cancel or close",
            Self::Rebind => "rebind the same principal to a newly observed session",
            Self::SelectOther => "select another candidate",
            Self::CancelSelected => "cancel the selected task or work item (asks first)",
            Self::Interrupt => "interrupt the selected task (dispatch stops)",
            Self::Resume => "resume the selected, interrupted task",
            Self::Redirect => "redirect the selected task to a new intent (asks first)",
            Self::PassReview => "pass the selected task's review (asks first)",
            Self::RejectReview => "reject the selected task's review (asks first)",
            Self::GrantApproval => "grant the approval the selected task waits for (asks first)",
            Self::DenyApproval => "deny the approval the selected task waits for (asks first)",
            Self::RetryItem => "give the selected blocked work item a new attempt (asks first)",
            Self::Recover => {
                "blocked task: back to fixing; fixing task: dispatch it again (asks first)"
            }
            Self::Toggle => "mark or unmark a work item as superseded",
            Self::Agent => "show the selected work item's terminal agent: live screen and state",
            Self::Attach => "attach a terminal to the agent's pane (a popup inside tmux)",
            Self::Message => "type a message for the running agent (delivered with proof)",
            Self::Follow => "follow the end of the agent's screen again",
            Self::NextNeed => "jump to the next need that waits for you (its task selected)",
            Self::Acknowledge => "mark the need under the Needs-you cursor as seen (again: unmark)",
            Self::PageUp => "move the cursor a page up",
            Self::PageDown => "move the cursor a page down",
            Self::First => "move the cursor to the first row",
            Self::Last => "move the cursor to the last row",
            Self::Palette => "open the command palette: every action, theme and task by name",
            Self::Filter => "show only the rows of every list that contain a text",
            Self::Complete => "complete the typed command to the chosen entry",
            Self::Details => "show everything about the selected row, and why it is in its state",
            Self::StateMachine => {
                "what the protocol allows next for the selected task or work item, and why not"
            }
            Self::AllowRequest => {
                "allow the selected agent's pending permission request (asks first; recorded)"
            }
            Self::DenyRequest => {
                "deny the selected agent's pending permission request (asks first; recorded)"
            }
        }
    }
}

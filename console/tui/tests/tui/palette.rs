//! The `:` command palette (completion over actions, themes and task ids), the `/` filter over
//! every list, and the themes (each drawn with its styles).

use crossterm::event::KeyCode;
use ratatui::style::Color;
use valp_tui::{App, Config, Pane, Slot, Sources};
use valp_view::Request;

use crate::support::{
    REVIEW, Scripted, draw, press, screen_text, snapshots, start, type_keys, working,
    working_read_only,
};

#[test]
fn the_palette_completes_over_actions_themes_and_tasks_and_runs_the_choice() {
    let mut backend = Scripted::new(working());
    let mut app = start(&mut backend);
    type_keys(&mut app, &mut backend, ":review");
    let screen = screen_text(&app, 120, 40);
    assert!(screen.contains("pass_review"), "{screen}");
    assert!(screen.contains("reject_review"), "{screen}");
    assert!(screen.contains(&format!("task {REVIEW}")), "{screen}");
    snapshots!("palette", &app);
    // Down to the task, Tab completes it, Enter selects it.
    press(&mut app, &mut backend, KeyCode::Down);
    press(&mut app, &mut backend, KeyCode::Down);
    press(&mut app, &mut backend, KeyCode::Tab);
    assert!(screen_text(&app, 120, 40).contains(&format!(":task {REVIEW}")));
    press(&mut app, &mut backend, KeyCode::Enter);
    assert_eq!(app.focus(), Pane::Tasks);
    assert_eq!(app.view().tasks[app.cursor(Pane::Tasks)].task_id, REVIEW);
    // An action by name, as its key would: the review dialog, then the request.
    type_keys(&mut app, &mut backend, ":pass_review");
    press(&mut app, &mut backend, KeyCode::Enter);
    type_keys(&mut app, &mut backend, "y");
    assert_eq!(
        backend.requests,
        [Request::Review {
            task_id: REVIEW.to_owned(),
            pass: true
        }]
    );
    // Nothing matches: said so; Esc closes without running anything.
    type_keys(&mut app, &mut backend, ":explode");
    press(&mut app, &mut backend, KeyCode::Enter);
    assert!(
        screen_text(&app, 120, 40)
            .contains("VALP-CONSOLE-NO-COMMAND: no command matches \"explode\""),
    );
    type_keys(&mut app, &mut backend, ":quit");
    press(&mut app, &mut backend, KeyCode::Esc);
    assert!(!screen_text(&app, 120, 40).contains(":quit"));
}

#[test]
fn a_palette_action_in_read_only_mode_is_refused_in_words() {
    let mut backend = Scripted::new(working_read_only());
    let mut app = start(&mut backend);
    type_keys(&mut app, &mut backend, ":cancel_selected");
    press(&mut app, &mut backend, KeyCode::Enter);
    assert!(backend.requests.is_empty());
    let screen = screen_text(&app, 120, 40);
    assert!(
        screen.contains("VALP-CONSOLE-READ-ONLY: cancel: refused"),
        "{screen}"
    );
}

#[test]
fn the_filter_keeps_the_matching_rows_of_every_list() {
    let mut backend = Scripted::new(working());
    let mut app = start(&mut backend);
    type_keys(&mut app, &mut backend, "/lint");
    press(&mut app, &mut backend, KeyCode::Enter);
    assert_eq!(app.filter(), "lint");
    let view = app.view();
    assert_eq!(
        view.tasks
            .iter()
            .map(|task| task.task_id.as_str())
            .collect::<Vec<_>>(),
        ["task-build-index"]
    );
    assert_eq!(
        view.items
            .iter()
            .map(|item| item.work_item_id.as_str())
            .collect::<Vec<_>>(),
        ["lint"]
    );
    assert_eq!(view.observations.len(), 1);
    assert_eq!(view.needs.len(), 1);
    assert!(view.activity.is_empty());
    let screen = screen_text(&app, 120, 40);
    assert!(screen.contains("filter /lint"), "{screen}");
    snapshots!("filter", &app);
    // The filter holds across a reload, and an empty one shows everything again.
    backend
        .view
        .activity
        .push("task-build-index  lint restarted".to_owned());
    valp_tui::dispatch(&mut app, &mut backend, valp_tui::Event::Changed);
    assert_eq!(app.view().activity.len(), 1);
    press(&mut app, &mut backend, KeyCode::Char('/'));
    for _ in 0..4 {
        press(&mut app, &mut backend, KeyCode::Backspace);
    }
    press(&mut app, &mut backend, KeyCode::Enter);
    assert_eq!(app.filter(), "");
    assert_eq!(app.view().tasks.len(), 4);
}

fn themed(theme: &str) -> App {
    let config = Config::resolve(&Sources {
        theme: Some(theme),
        ..Sources::default()
    })
    .unwrap();
    App::new(config, working())
}

#[test]
fn each_theme_draws_with_its_own_styles() {
    for theme in ["default", "dark", "light", "high-contrast"] {
        let app = themed(theme);
        for (width, height) in [(120, 40), (80, 24)] {
            let terminal = draw(&app, width, height);
            insta::assert_debug_snapshot!(
                format!("theme_{theme}_{width}x{height}"),
                terminal.backend().buffer()
            );
        }
    }
    let base = |theme: &str| {
        Config::resolve(&Sources {
            theme: Some(theme),
            ..Sources::default()
        })
        .unwrap()
        .theme
        .style(Slot::Base)
        .bg
    };
    assert_eq!(base("light"), Some(Color::Rgb(0xff, 0xff, 0xff)));
    assert_eq!(base("high-contrast"), Some(Color::Black));
    // `:theme light` switches while running; NO_COLOR would still win (config tests).
    let mut backend = Scripted::new(working());
    let mut app = start(&mut backend);
    type_keys(&mut app, &mut backend, ":theme light");
    press(&mut app, &mut backend, KeyCode::Enter);
    let terminal = draw(&app, 80, 24);
    assert_eq!(
        terminal.backend().buffer()[(0, 23)].bg,
        Color::Rgb(0xff, 0xff, 0xff)
    );
    assert!(screen_text(&app, 80, 24).contains("theme light"));
}

//! Carrying out the app's [`Effect`]s against the [`Backend`]: on the backend's own thread for
//! the event loop ([`Worker`]), or inline for tests ([`dispatch`]). Both run the same
//! [`carry_out`], so a test of `dispatch` tests what the loop does, only without the thread.
//!
//! The thread serves jobs in the order the app asked for them (a reload asked after a request
//! reads the view that request left). View reads are coalesced: while one is on its way, any
//! number of further reloads become one more read after it, so a burst of disk changes cannot
//! queue a burst of runtime pumps.

use std::collections::VecDeque;
use std::io;

use tokio::sync::{mpsc, oneshot};

use super::Flow;
use super::app::App;
use super::event::{Effect, Event};
use valp_view::{Backend, ConsoleView, Request};

/// Something for the backend to do.
enum Job {
    /// Carry out a request.
    Send { request: Request, quiet: bool },
    /// Read the view again.
    Reload,
}

/// The job an effect asks for; `None` for [`Effect::Quit`].
fn job(effect: Effect) -> Option<Job> {
    match effect {
        Effect::Send { request, quiet } => Some(Job::Send { request, quiet }),
        Effect::Reload => Some(Job::Reload),
        Effect::Quit => None,
    }
}

/// Does `job` against `backend`; the answer is the event the app gets back.
fn carry_out(backend: &mut dyn Backend, job: Job) -> Event {
    match job {
        Job::Send { request, quiet } => {
            let started = std::time::Instant::now();
            // A refresh nobody asked for is the slow tick's ([`crate::App::handle`]).
            let outcome = if quiet && request == Request::Refresh {
                backend.tick()
            } else {
                backend.request(&request)
            };
            tracing::info!(
                ?request,
                ok = outcome.is_ok(),
                millis = started.elapsed().as_millis(),
                "backend answered"
            );
            Event::Answered {
                request,
                quiet,
                outcome,
            }
        }
        Job::Reload => Event::Loaded(Box::new(backend.view())),
    }
}

/// Hands `event` to the app and carries out its effects against `backend` inline, feeding
/// answers and re-read views back to the app, until nothing is left to do.
pub fn dispatch(app: &mut App, backend: &mut dyn Backend, event: Event) -> Flow {
    let mut pending = VecDeque::from([event]);
    while let Some(event) = pending.pop_front() {
        for effect in app.handle(event) {
            match job(effect) {
                Some(job) => pending.push_back(carry_out(backend, job)),
                None => return Flow::Quit,
            }
        }
    }
    Flow::Continue
}

/// The event loop's side of the backend thread.
pub struct Worker {
    jobs: mpsc::UnboundedSender<Job>,
    /// The backend's answers, in the order of the jobs.
    pub answers: mpsc::UnboundedReceiver<Event>,
    reload_in_flight: bool,
    reload_wanted: bool,
}

impl Worker {
    /// Moves `backend` to a thread of its own, which first reads the view (the returned
    /// receiver gets it: while the backend is still opening, the view so far, and the answers
    /// then bring the rest, ending with the full view, see [`Backend::open_next`]), then serves
    /// jobs until the worker is dropped. Call [`Self::first_view`] with the first view.
    pub fn start(
        mut backend: Box<dyn Backend + Send>,
    ) -> io::Result<(Self, oneshot::Receiver<ConsoleView>)> {
        let (jobs, mut queue) = mpsc::unbounded_channel();
        let (answer, answers) = mpsc::unbounded_channel();
        let (first, first_view) = oneshot::channel();
        std::thread::Builder::new()
            .name("valp-backend".to_owned())
            .spawn(move || {
                // The view so far while the backend opens what it shows, piece by piece; the
                // full view after the last piece.
                let opening = backend.open_next();
                let still_opening = opening.is_some();
                let view = opening.unwrap_or_else(|| backend.view());
                if first.send(view).is_err() {
                    return;
                }
                if still_opening {
                    while let Some(partial) = backend.open_next() {
                        if answer.send(Event::Loaded(Box::new(partial))).is_err() {
                            return;
                        }
                    }
                    if answer
                        .send(Event::Loaded(Box::new(backend.view())))
                        .is_err()
                    {
                        return;
                    }
                }
                while let Some(job) = queue.blocking_recv() {
                    if answer.send(carry_out(backend.as_mut(), job)).is_err() {
                        return;
                    }
                }
            })?;
        let worker = Self {
            jobs,
            answers,
            reload_in_flight: false,
            reload_wanted: false,
        };
        Ok((worker, first_view))
    }

    /// Takes note of the first view: while it is a partial one, the full view is on its way
    /// (as if a reload were in flight), so reloads asked meanwhile coalesce behind it.
    pub fn first_view(&mut self, view: &ConsoleView) {
        self.reload_in_flight = view.opening.is_some();
    }

    /// Hands `event` (from the terminal, a notifier, the tick or the backend) to the app and
    /// queues its effects for the backend thread, without waiting for any of them.
    pub fn apply(&mut self, app: &mut App, event: Event) -> Flow {
        if matches!(&event, Event::Loaded(view) if view.opening.is_none()) {
            self.reload_in_flight = false;
            if std::mem::take(&mut self.reload_wanted) {
                self.queue(Job::Reload);
            }
        }
        for effect in app.handle(event) {
            match job(effect) {
                Some(job) => self.queue(job),
                None => return Flow::Quit,
            }
        }
        Flow::Continue
    }

    fn queue(&mut self, job: Job) {
        if matches!(job, Job::Reload) {
            if self.reload_in_flight {
                self.reload_wanted = true;
                return;
            }
            self.reload_in_flight = true;
        }
        // The thread only stops once this worker is gone: sending cannot fail before that.
        let _ = self.jobs.send(job);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use std::sync::mpsc::{Receiver, Sender, channel};
    use std::time::Duration;

    use super::*;
    use crate::Config;
    use valp_view::Refusal;

    /// A backend that reports each call and waits for `gate` before answering a request.
    struct Slow {
        view: ConsoleView,
        calls: Sender<&'static str>,
        gate: Receiver<()>,
    }

    impl Backend for Slow {
        fn view(&mut self) -> ConsoleView {
            let _ = self.calls.send("view");
            self.view.clone()
        }

        fn request(&mut self, _: &Request) -> Result<String, Refusal> {
            let _ = self.calls.send("request");
            let _ = self.gate.recv();
            Ok("done".to_owned())
        }
    }

    /// A backend that opens `left` pieces, each taking `each`, before its full view.
    struct Opening {
        left: usize,
        each: Duration,
        listed: bool,
    }

    impl Backend for Opening {
        fn view(&mut self) -> ConsoleView {
            ConsoleView::default()
        }

        fn request(&mut self, _: &Request) -> Result<String, Refusal> {
            Ok("done".to_owned())
        }

        fn open_next(&mut self) -> Option<ConsoleView> {
            if std::mem::replace(&mut self.listed, true) {
                if self.left == 0 {
                    return None;
                }
                std::thread::sleep(self.each);
                self.left -= 1;
            }
            Some(ConsoleView {
                opening: Some(valp_view::Opening {
                    tasks_open: 4 - self.left,
                    tasks_total: 4,
                    ..valp_view::Opening::default()
                }),
                ..ConsoleView::default()
            })
        }
    }

    #[tokio::test]
    async fn the_first_view_comes_before_a_slow_open_and_q_quits_during_it() {
        let backend = Opening {
            left: 4,
            each: Duration::from_millis(400),
            listed: false,
        };
        let started = std::time::Instant::now();
        let (mut worker, first) = Worker::start(Box::new(backend)).unwrap();
        let first = first.await.unwrap();
        assert!(
            started.elapsed() < Duration::from_millis(400),
            "the first view waited for the open: {:?}",
            started.elapsed()
        );
        worker.first_view(&first);
        let mut app = App::new(Config::builtin().unwrap(), first);
        assert!(app.opening());
        // A reload asked while opening waits for the full view instead of queueing a read.
        assert_eq!(worker.apply(&mut app, Event::Changed), Flow::Continue);
        let partial = worker.answers.recv().await.unwrap();
        worker.apply(&mut app, partial);
        assert_eq!(
            app.view()
                .opening
                .as_ref()
                .map(|opening| opening.tasks_open),
            Some(1)
        );
        let quit = Event::Key(crossterm::event::KeyEvent::from(
            crossterm::event::KeyCode::Char('q'),
        ));
        assert_eq!(worker.apply(&mut app, quit), Flow::Quit);
        assert!(
            started.elapsed() < Duration::from_millis(1_600),
            "q waited for the open: {:?}",
            started.elapsed()
        );
        // Had it stayed: the rest of the pieces, then the full view, then the one reload.
        let mut opened = Vec::new();
        while let Some(Event::Loaded(view)) = worker.answers.recv().await {
            let more = view.opening.is_some();
            opened.push(view.opening.map(|opening| opening.tasks_open));
            worker.apply(&mut app, Event::Loaded(Box::default()));
            if !more && opened.len() > 4 {
                break;
            }
        }
        assert_eq!(opened, [Some(2), Some(3), Some(4), None, None]);
        assert!(!app.opening());
    }

    fn recv(calls: &Receiver<&'static str>) -> &'static str {
        calls.recv_timeout(Duration::from_secs(5)).unwrap()
    }

    #[tokio::test]
    async fn a_busy_backend_leaves_the_app_answering_and_reloads_coalesce() {
        let (calls, seen) = channel();
        let (open, gate) = channel();
        let backend = Slow {
            view: valp_view::ConsoleView::default(),
            calls,
            gate,
        };
        let (mut worker, first) = Worker::start(Box::new(backend)).unwrap();
        let mut app = App::new(Config::builtin().unwrap(), first.await.unwrap());
        assert_eq!(recv(&seen), "view");

        // A request the backend sits on; the app goes on handling events meanwhile.
        let refresh = Event::Key(crossterm::event::KeyEvent::from(
            crossterm::event::KeyCode::Char('g'),
        ));
        assert_eq!(worker.apply(&mut app, refresh), Flow::Continue);
        assert_eq!(recv(&seen), "request");
        assert_eq!(
            app.notice(),
            Some(&super::super::Notice::Pending(Request::Refresh))
        );
        for _ in 0..3 {
            assert_eq!(worker.apply(&mut app, Event::Changed), Flow::Continue);
        }
        let quit = Event::Key(crossterm::event::KeyEvent::from(
            crossterm::event::KeyCode::Char('q'),
        ));
        open.send(()).unwrap();
        // Three changes while busy: one read, then one more after it, not three.
        let answered = worker.answers.recv().await.unwrap();
        assert!(matches!(answered, Event::Answered { .. }), "{answered:?}");
        worker.apply(&mut app, answered);
        assert_eq!(recv(&seen), "view");
        let loaded = worker.answers.recv().await.unwrap();
        worker.apply(&mut app, loaded);
        assert_eq!(recv(&seen), "view");
        let loaded = worker.answers.recv().await.unwrap();
        worker.apply(&mut app, loaded);
        assert!(
            seen.recv_timeout(Duration::from_millis(100)).is_err(),
            "no further reads"
        );
        assert_eq!(worker.apply(&mut app, quit), Flow::Quit);
    }
}

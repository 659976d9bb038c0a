//! A scripted model server for the real-agent tests: the model endpoint of Claude Code, Codex
//! and Aider, on `127.0.0.1` and an ephemeral port, one server per test.
//!
//! It speaks the three wire dialects the CLIs use ([`Dialect`]): the Anthropic Messages API
//! (`POST /v1/messages`), the `OpenAI` Responses API (`POST /v1/responses`) and `OpenAI` Chat
//! Completions (`POST /v1/chat/completions`), streamed as server-sent events when the request
//! asks for a stream, as one JSON object otherwise; `HEAD /` and `GET /` answer 200 (Claude
//! Code checks connectivity). What it answers is the test's [`Script`], chosen per request
//! with no state kept between requests:
//! - a *side* request (one that offers no tools, such as a title or a commit message, or an
//!   unstreamed Chat request) gets [`Script::side`];
//! - a request whose latest turn carries a tool result gets [`Script::after_tool`];
//! - any other request gets [`Script::first`].
//!
//! Every request is logged ([`ModelServer::requests`]) with its path and body, so a test can
//! assert the exact prompt an agent sent ([`Request::user_texts`]). The server is bounded: it
//! listens on loopback only, serves at most [`MAX_REQUESTS`] requests (then answers 503), reads
//! bodies of at most [`MAX_BODY`] bytes, drops a connection idle for [`IDLE`], stops accepting
//! after [`LIFETIME`], and stops at once, closing every connection, when dropped.

#![allow(clippy::expect_used, clippy::panic)] // test support: a failure is a test failure

use std::io::{BufRead, BufReader, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Requests served before the server answers 503 to everything.
pub const MAX_REQUESTS: usize = 500;
/// The largest request body read (Claude Code's requests carry its system prompt and tools).
pub const MAX_BODY: usize = 16 << 20;
/// How long a connection may stay silent before it is dropped.
pub const IDLE: Duration = Duration::from_secs(30);
/// How long the server accepts connections at most.
pub const LIFETIME: Duration = Duration::from_secs(15 * 60);
/// The model name the server reports.
pub const MODEL: &str = "scripted-model";

/// A wire protocol, chosen by the request's path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// `POST /v1/messages` (Claude Code).
    Anthropic,
    /// `POST /v1/responses` (Codex).
    Responses,
    /// `POST /v1/chat/completions` (Aider).
    Chat,
}

impl Dialect {
    fn of(path: &str) -> Option<Self> {
        let path = path.split('?').next().unwrap_or_default();
        match path {
            "/v1/messages" => Some(Self::Anthropic),
            "/v1/responses" | "/responses" => Some(Self::Responses),
            "/v1/chat/completions" | "/chat/completions" => Some(Self::Chat),
            _ => None,
        }
    }
}

/// In a [`Reply::Text`], replaced by the request's serial number (1 for the first request the
/// server received): a stateless script that names a new file in every turn.
pub const SERIAL: &str = "{serial}";

/// One answer of the model.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// A text; the turn ends. [`SERIAL`] in it becomes the request's serial number.
    Text(String),
    /// A call of the tool `name` with `input`; the agent runs it and sends its result back.
    Tool {
        /// The tool (`Write` for Claude Code, `exec_command` for Codex).
        name: String,
        /// Its arguments.
        input: Value,
    },
    /// `text` streamed in `pieces` equal pieces, one every `every`: a turn long enough to be
    /// interrupted. The stream stops early when the agent hangs up.
    Slow {
        /// One piece of text, sent `pieces` times.
        piece: String,
        /// How many.
        pieces: usize,
        /// The pause after each.
        every: Duration,
    },
    /// An error status, with `message` in the dialect's error shape.
    Error {
        /// The HTTP status (4xx: the CLIs retry 5xx).
        status: u16,
        /// The error message.
        message: String,
    },
}

/// What the model answers, by kind of request (see the module documentation).
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    /// The answer to a new prompt.
    pub first: Reply,
    /// The answer once a tool result came back.
    pub after_tool: Reply,
    /// The answer to a side request (titles, commit messages).
    pub side: Reply,
}

impl Script {
    /// Answers every prompt with `text`.
    pub fn text(text: &str) -> Self {
        Self::new(Reply::Text(text.to_owned()), Reply::Text(text.to_owned()))
    }

    /// Calls tool `name` with `input`, then ends the turn with `text`.
    pub fn tool_then_text(name: &str, input: Value, text: &str) -> Self {
        Self::new(
            Reply::Tool {
                name: name.to_owned(),
                input,
            },
            Reply::Text(text.to_owned()),
        )
    }

    /// `first`, then `after_tool`; side requests get a short title.
    pub fn new(first: Reply, after_tool: Reply) -> Self {
        Self {
            first,
            after_tool,
            side: Reply::Text("Scripted title".to_owned()),
        }
    }
}

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Request {
    /// `POST`, `HEAD`, …
    pub method: String,
    /// The path with its query.
    pub path: String,
    /// The body as JSON (`Value::Null` when there is none or it is not JSON).
    pub body: Value,
    /// The dialect its path names.
    pub dialect: Option<Dialect>,
    /// Which part of the script answered (`first`, `after_tool`, `side`, `none`, `over budget`).
    pub answered: &'static str,
}

impl Request {
    /// The texts of the user's messages, in order, as the dialect carries them.
    pub fn user_texts(&self) -> Vec<String> {
        let (list, text_types) = match self.dialect {
            Some(Dialect::Anthropic | Dialect::Chat) => ("messages", ["text", "text"]),
            Some(Dialect::Responses) => ("input", ["input_text", "text"]),
            None => return Vec::new(),
        };
        let mut texts = Vec::new();
        for message in self.body[list].as_array().into_iter().flatten() {
            if message["role"] != "user" {
                continue;
            }
            match &message["content"] {
                Value::String(text) => texts.push(text.clone()),
                Value::Array(parts) => texts.extend(
                    parts
                        .iter()
                        .filter(|part| text_types.iter().any(|kind| part["type"] == *kind))
                        .filter_map(|part| part["text"].as_str().map(str::to_owned)),
                ),
                _ => {}
            }
        }
        texts
    }

    /// Whether the latest turn carries a tool's result.
    pub fn has_tool_result(&self) -> bool {
        match self.dialect {
            Some(Dialect::Anthropic) => self.body["messages"]
                .as_array()
                .and_then(|messages| messages.last())
                .and_then(|last| last["content"].as_array())
                .is_some_and(|blocks| blocks.iter().any(|block| block["type"] == "tool_result")),
            Some(Dialect::Responses) => self.body["input"].as_array().is_some_and(|items| {
                items
                    .iter()
                    .rev()
                    .take_while(|item| item["role"] != "user")
                    .any(|item| item["type"] == "function_call_output")
            }),
            Some(Dialect::Chat) => self.body["messages"]
                .as_array()
                .and_then(|messages| messages.last())
                .is_some_and(|last| last["role"] == "tool"),
            None => false,
        }
    }

    /// Whether this is a side request: no tools offered, or an unstreamed Chat request.
    pub fn is_side(&self) -> bool {
        match self.dialect {
            Some(Dialect::Chat) => self.body["stream"] != true,
            Some(_) => self.body["tools"].as_array().is_none_or(Vec::is_empty),
            None => false,
        }
    }

    /// Whether it asked for a stream.
    fn streamed(&self) -> bool {
        self.body["stream"] == true || self.dialect == Some(Dialect::Responses)
    }
}

/// State shared by the server's threads.
#[derive(Debug, Default)]
struct Shared {
    log: Mutex<Vec<Request>>,
    connections: Mutex<Vec<TcpStream>>,
    stop: AtomicBool,
}

/// A running scripted model server; dropping it stops it.
#[derive(Debug)]
pub struct ModelServer {
    port: u16,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

impl ModelServer {
    /// Starts a server answering with `script` on a fresh loopback port.
    pub fn start(script: Script) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("binding a loopback port");
        let port = listener.local_addr().expect("a bound address").port();
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let shared = Arc::new(Shared::default());
        let acceptor = {
            let shared = Arc::clone(&shared);
            let script = Arc::new(script);
            std::thread::spawn(move || accept(&listener, &shared, &script))
        };
        Self {
            port,
            shared,
            acceptor: Some(acceptor),
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        lock(&self.shared.log).clone()
    }

    /// Waits until a logged request satisfies `wanted` and returns it; panics, listing what
    /// was received, after `patience`.
    pub fn wait_for(
        &self,
        what: &str,
        patience: Duration,
        wanted: impl Fn(&Request) -> bool,
    ) -> Request {
        let deadline = Instant::now() + patience;
        loop {
            if let Some(found) = lock(&self.shared.log).iter().find(|r| wanted(r)) {
                return found.clone();
            }
            assert!(
                Instant::now() < deadline,
                "the scripted model saw no {what} within {patience:?}; it saw: {:?}",
                self.requests()
                    .iter()
                    .map(|r| format!("{} {} ({})", r.method, r.path, r.answered))
                    .collect::<Vec<_>>()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        for connection in lock(&self.shared.connections).drain(..) {
            let _ = connection.shutdown(Shutdown::Both);
        }
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn accept(listener: &TcpListener, shared: &Arc<Shared>, script: &Arc<Script>) {
    let started = Instant::now();
    while !shared.stop.load(Ordering::SeqCst) && started.elapsed() < LIFETIME {
        match listener.accept() {
            Ok((stream, peer)) if peer.ip().is_loopback() => {
                let Ok(copy) = stream.try_clone() else {
                    continue;
                };
                lock(&shared.connections).push(copy);
                let shared = Arc::clone(shared);
                let script = Arc::clone(script);
                std::thread::spawn(move || serve(stream, &shared, &script));
            }
            Ok(_) => {}
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

/// Serves the requests of one keep-alive connection until it closes, idles or fails.
fn serve(stream: TcpStream, shared: &Shared, script: &Script) {
    // No Nagle: a response's pieces and each streamed event go out at once.
    if stream.set_nonblocking(false).is_err()
        || stream.set_nodelay(true).is_err()
        || stream.set_read_timeout(Some(IDLE)).is_err()
        || stream.set_write_timeout(Some(IDLE)).is_err()
    {
        return;
    }
    let Ok(writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    let mut writer = writer;
    while let Some((method, path, body, close)) = read_request(&mut reader) {
        let mut request = Request {
            method,
            dialect: Dialect::of(&path),
            path,
            body: serde_json::from_slice(&body).unwrap_or(Value::Null),
            answered: "none",
        };
        let served = lock(&shared.log).len();
        let reply = if served >= MAX_REQUESTS {
            request.answered = "over budget";
            None
        } else if request.dialect.is_none() {
            None
        } else if request.is_side() {
            request.answered = "side";
            Some(&script.side)
        } else if request.has_tool_result() {
            request.answered = "after_tool";
            Some(&script.after_tool)
        } else {
            request.answered = "first";
            Some(&script.first)
        };
        let answer = Answer {
            dialect: request.dialect,
            streamed: request.streamed(),
            serial: served + 1,
        };
        let method = request.method.clone();
        let known_path = request.path.split('?').next() == Some("/");
        lock(&shared.log).push(request);
        let written = match reply {
            Some(reply) => answer.write(&mut writer, reply, &shared.stop),
            None if served >= MAX_REQUESTS => plain(
                &mut writer,
                503,
                "request budget of the scripted model spent",
            ),
            None if known_path && (method == "HEAD" || method == "GET") => {
                plain(&mut writer, 200, "")
            }
            None => plain(&mut writer, 404, "not scripted"),
        };
        if written.is_err() || close {
            break;
        }
    }
}

/// Reads one request: method, path, body, and whether the client asked to close.
fn read_request(reader: &mut impl BufRead) -> Option<(String, String, Vec<u8>, bool)> {
    let mut line = String::new();
    let mut head = Vec::new();
    loop {
        line.clear();
        let read = reader.read_line(&mut line).ok()?;
        if read == 0 || head.len() > 200 {
            return None;
        }
        let trimmed = line.trim_end().to_owned();
        if trimmed.is_empty() {
            if head.is_empty() {
                continue; // a stray line break between requests
            }
            break;
        }
        head.push(trimmed);
    }
    let mut words = head.first()?.split_whitespace();
    let method = words.next()?.to_owned();
    let path = words.next()?.to_owned();
    let header = |name: &str| {
        head.iter().skip(1).find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim()
                .eq_ignore_ascii_case(name)
                .then(|| value.trim().to_ascii_lowercase())
        })
    };
    let close = header("connection").as_deref() == Some("close");
    let body = if header("transfer-encoding").is_some_and(|value| value.contains("chunked")) {
        read_chunked(reader)?
    } else {
        let length: usize = header("content-length").map_or(Some(0), |n| n.parse().ok())?;
        if length > MAX_BODY {
            return None;
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).ok()?;
        body
    };
    Some((method, path, body, close))
}

fn read_chunked(reader: &mut impl BufRead) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        reader.read_line(&mut size).ok()?;
        let size = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
        if body.len() + size > MAX_BODY {
            return None;
        }
        let mut chunk = vec![0; size + 2];
        reader.read_exact(&mut chunk).ok()?;
        if size == 0 {
            return Some(body);
        }
        body.extend_from_slice(&chunk[..size]);
    }
}

fn plain(writer: &mut impl Write, status: u16, text: &str) -> std::io::Result<()> {
    write!(
        writer,
        "HTTP/1.1 {status} {}\r\ncontent-type: text/plain\r\ncontent-length: {}\r\n\r\n{text}",
        reason(status),
        text.len()
    )?;
    writer.flush()
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        429 => "Too Many Requests",
        503 => "Service Unavailable",
        _ => "Scripted",
    }
}

/// One server-sent event: its name (none for Chat Completions), its data, and the pause after it.
struct Event {
    name: Option<&'static str>,
    data: Value,
    pause: Duration,
}

impl Event {
    fn new(name: &'static str, data: Value) -> Self {
        Self {
            name: Some(name),
            data,
            pause: Duration::ZERO,
        }
    }
}

/// How to write one answer.
struct Answer {
    dialect: Option<Dialect>,
    streamed: bool,
    serial: usize,
}

/// The text pieces and tool call of a reply, with the pause after each piece.
struct Output {
    pieces: Vec<String>,
    pause: Duration,
    tool: Option<(String, String)>,
}

impl Output {
    fn of(reply: &Reply, serial: usize) -> Self {
        match reply {
            Reply::Text(text) => Self {
                pieces: vec![text.replace(SERIAL, &serial.to_string())],
                pause: Duration::ZERO,
                tool: None,
            },
            Reply::Tool { name, input } => Self {
                pieces: Vec::new(),
                pause: Duration::ZERO,
                tool: Some((name.clone(), input.to_string())),
            },
            Reply::Slow {
                piece,
                pieces,
                every,
            } => Self {
                pieces: vec![piece.clone(); *pieces],
                pause: *every,
                tool: None,
            },
            Reply::Error { .. } => Self {
                pieces: Vec::new(),
                pause: Duration::ZERO,
                tool: None,
            },
        }
    }

    fn text(&self) -> String {
        self.pieces.concat()
    }
}

impl Answer {
    fn write(
        &self,
        writer: &mut impl Write,
        reply: &Reply,
        stop: &AtomicBool,
    ) -> std::io::Result<()> {
        let Some(dialect) = self.dialect else {
            return plain(writer, 404, "not scripted");
        };
        if let Reply::Error { status, message } = reply {
            let body = match dialect {
                Dialect::Anthropic => json!({
                    "type": "error",
                    "error": {"type": "invalid_request_error", "message": message},
                }),
                Dialect::Responses | Dialect::Chat => json!({
                    "error": {"message": message, "type": "invalid_request_error", "param": null, "code": null},
                }),
            };
            return json_response(writer, *status, &body);
        }
        let output = Output::of(reply, self.serial);
        let events = match dialect {
            Dialect::Anthropic => self.anthropic(&output),
            Dialect::Responses => self.responses(&output),
            Dialect::Chat => self.chat(&output),
        };
        if !self.streamed {
            let last = events.last().map(|event| event.data.clone());
            let body = match dialect {
                Dialect::Anthropic => self.anthropic_message(&output),
                Dialect::Responses => last
                    .map(|last| last["response"].clone())
                    .unwrap_or_default(),
                Dialect::Chat => self.chat_completion(&output),
            };
            return json_response(writer, 200, &body);
        }
        write!(
            writer,
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\
             transfer-encoding: chunked\r\n\r\n"
        )?;
        for event in &events {
            let text = match event.name {
                Some(name) => format!("event: {name}\ndata: {}\n\n", event.data),
                None => format!("data: {}\n\n", event.data),
            };
            chunk(writer, &text)?;
            if !event.pause.is_zero() {
                pause(event.pause, stop)?;
            }
        }
        if dialect == Dialect::Chat {
            chunk(writer, "data: [DONE]\n\n")?;
        }
        writer.write_all(b"0\r\n\r\n")?;
        writer.flush()
    }

    fn anthropic_message(&self, output: &Output) -> Value {
        let mut content = Vec::new();
        if !output.pieces.is_empty() {
            content.push(json!({"type": "text", "text": output.text()}));
        }
        if let Some((name, input)) = &output.tool {
            let input: Value = serde_json::from_str(input).unwrap_or_default();
            content.push(
                json!({"type": "tool_use", "id": self.id("toolu"), "name": name, "input": input}),
            );
        }
        json!({
            "id": self.id("msg"), "type": "message", "role": "assistant", "model": MODEL,
            "content": content,
            "stop_reason": if output.tool.is_some() { "tool_use" } else { "end_turn" },
            "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 10},
        })
    }

    fn anthropic(&self, output: &Output) -> Vec<Event> {
        let mut message = self.anthropic_message(output);
        message["content"] = json!([]);
        message["stop_reason"] = Value::Null;
        let mut events = vec![Event::new(
            "message_start",
            json!({"type": "message_start", "message": message}),
        )];
        let mut index = 0;
        if !output.pieces.is_empty() {
            events.push(Event::new("content_block_start", json!({
                "type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""},
            })));
            for piece in &output.pieces {
                events.push(Event {
                    pause: output.pause,
                    ..Event::new(
                        "content_block_delta",
                        json!({
                            "type": "content_block_delta", "index": index,
                            "delta": {"type": "text_delta", "text": piece},
                        }),
                    )
                });
            }
            events.push(Event::new(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": index}),
            ));
            index += 1;
        }
        if let Some((name, input)) = &output.tool {
            events.push(Event::new("content_block_start", json!({
                "type": "content_block_start", "index": index,
                "content_block": {"type": "tool_use", "id": self.id("toolu"), "name": name, "input": {}},
            })));
            events.push(Event::new(
                "content_block_delta",
                json!({
                    "type": "content_block_delta", "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": input},
                }),
            ));
            events.push(Event::new(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": index}),
            ));
        }
        let stop_reason = if output.tool.is_some() {
            "tool_use"
        } else {
            "end_turn"
        };
        events.push(Event::new(
            "message_delta",
            json!({
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                "usage": {"output_tokens": 10},
            }),
        ));
        events.push(Event::new("message_stop", json!({"type": "message_stop"})));
        events
    }

    fn responses(&self, output: &Output) -> Vec<Event> {
        let id = self.id("resp");
        let mut response = json!({
            "id": id, "object": "response", "created_at": 0, "status": "in_progress",
            "model": MODEL, "output": [],
        });
        let mut events = vec![Event::new(
            "response.created",
            json!({"type": "response.created", "response": response}),
        )];
        let mut items = Vec::new();
        if !output.pieces.is_empty() {
            let item_id = self.id("msg");
            let added = json!({"type": "message", "id": item_id, "role": "assistant", "status": "in_progress", "content": []});
            events.push(Event::new("response.output_item.added", json!({
                "type": "response.output_item.added", "output_index": items.len(), "item": added,
            })));
            for piece in &output.pieces {
                events.push(Event {
                    pause: output.pause,
                    ..Event::new(
                        "response.output_text.delta",
                        json!({
                            "type": "response.output_text.delta", "item_id": item_id,
                            "output_index": items.len(), "content_index": 0, "delta": piece,
                        }),
                    )
                });
            }
            items.push(json!({
                "type": "message", "id": item_id, "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": output.text(), "annotations": []}],
            }));
        }
        if let Some((name, arguments)) = &output.tool {
            items.push(json!({
                "type": "function_call", "id": self.id("fc"), "call_id": self.id("call"),
                "name": name, "arguments": arguments, "status": "completed",
            }));
        }
        for (index, item) in items.iter().enumerate() {
            events.push(Event::new(
                "response.output_item.done",
                json!({
                    "type": "response.output_item.done", "output_index": index, "item": item,
                }),
            ));
        }
        response["status"] = json!("completed");
        response["output"] = json!(items);
        response["usage"] = json!({
            "input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 10, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 20,
        });
        events.push(Event::new(
            "response.completed",
            json!({"type": "response.completed", "response": response}),
        ));
        events
    }

    fn chat_chunk(&self, delta: &Value, finish: Option<&str>) -> Value {
        json!({
            "id": self.id("chatcmpl"), "object": "chat.completion.chunk", "created": 0, "model": MODEL,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        })
    }

    fn chat(&self, output: &Output) -> Vec<Event> {
        let mut events: Vec<Event> = output
            .pieces
            .iter()
            .map(|piece| Event {
                name: None,
                data: self.chat_chunk(&json!({"role": "assistant", "content": piece}), None),
                pause: output.pause,
            })
            .collect();
        if let Some(call) = self.chat_tool_calls(output) {
            events.push(Event {
                name: None,
                data: self.chat_chunk(&json!({"role": "assistant", "tool_calls": call}), None),
                pause: Duration::ZERO,
            });
        }
        let finish = if output.tool.is_some() {
            "tool_calls"
        } else {
            "stop"
        };
        let mut last = self.chat_chunk(&json!({}), Some(finish));
        last["usage"] = json!({"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20});
        events.push(Event {
            name: None,
            data: last,
            pause: Duration::ZERO,
        });
        events
    }

    fn chat_tool_calls(&self, output: &Output) -> Option<Value> {
        output.tool.as_ref().map(|(name, arguments)| {
            json!([{"index": 0, "id": self.id("call"), "type": "function",
                    "function": {"name": name, "arguments": arguments}}])
        })
    }

    fn chat_completion(&self, output: &Output) -> Value {
        let mut message = json!({"role": "assistant", "content": output.text()});
        if let Some(calls) = self.chat_tool_calls(output) {
            message["tool_calls"] = calls;
        }
        json!({
            "id": self.id("chatcmpl"), "object": "chat.completion", "created": 0, "model": MODEL,
            "choices": [{"index": 0, "message": message,
                         "finish_reason": if output.tool.is_some() { "tool_calls" } else { "stop" }}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
        })
    }

    fn id(&self, prefix: &str) -> String {
        format!("{prefix}_scripted_{}", self.serial)
    }
}

fn json_response(writer: &mut impl Write, status: u16, body: &Value) -> std::io::Result<()> {
    let body = body.to_string();
    write!(
        writer,
        "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        reason(status),
        body.len()
    )?;
    writer.flush()
}

fn chunk(writer: &mut impl Write, text: &str) -> std::io::Result<()> {
    write!(writer, "{:x}\r\n{text}\r\n", text.len())?;
    writer.flush()
}

/// Sleeps `length`, waking early (with an error that ends the stream) when the server stops.
fn pause(length: Duration, stop: &AtomicBool) -> std::io::Result<()> {
    let deadline = Instant::now() + length;
    while Instant::now() < deadline {
        if stop.load(Ordering::SeqCst) {
            return Err(std::io::Error::other("the scripted model stopped"));
        }
        std::thread::sleep(Duration::from_millis(20).min(length));
    }
    Ok(())
}

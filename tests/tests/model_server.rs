//! The scripted model server of the real-agent tests (`valp_tests::model`), driven with a raw
//! HTTP/1.1 client: each dialect's stream for a tool call, the answer after a tool result and
//! to a side request, unstreamed answers, error replies, a slow stream cut short when the
//! server stops, the request log, unscripted paths and the request budget.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use valp_tests::model::{self, Dialect, MAX_REQUESTS, ModelServer, Reply, Script};

/// A response: status, body (de-chunked).
struct Response {
    status: u16,
    body: String,
}

impl Response {
    /// The `data:` payloads of a server-sent event stream, with the event names.
    fn events(&self) -> Vec<(Option<String>, Value)> {
        self.body
            .split("\n\n")
            .filter(|block| !block.trim().is_empty())
            .map(|block| {
                let mut name = None;
                let mut data = Value::Null;
                for line in block.lines() {
                    if let Some(rest) = line.strip_prefix("event: ") {
                        name = Some(rest.to_owned());
                    } else if let Some(rest) = line.strip_prefix("data: ") {
                        data = serde_json::from_str(rest).unwrap_or(json!(rest));
                    }
                }
                (name, data)
            })
            .collect()
    }
}

fn read_response(reader: &mut impl BufRead) -> Response {
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let status = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    let mut length = None;
    let mut chunked = false;
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        let header = line.trim_end().to_ascii_lowercase();
        if header.is_empty() {
            break;
        }
        if let Some(value) = header.strip_prefix("content-length: ") {
            length = Some(value.parse::<usize>().unwrap());
        }
        chunked |= header == "transfer-encoding: chunked";
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            line.clear();
            reader.read_line(&mut line).unwrap();
            let size = usize::from_str_radix(line.trim(), 16).unwrap();
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk).unwrap();
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    } else {
        body.resize(length.unwrap(), 0);
        reader.read_exact(&mut body).unwrap();
    }
    Response {
        status,
        body: String::from_utf8(body).unwrap(),
    }
}

/// Sends requests on one keep-alive connection and reads each response.
struct Client {
    writer: TcpStream,
    reader: BufReader<TcpStream>,
}

impl Client {
    fn connect(server: &ModelServer) -> Self {
        let stream = TcpStream::connect(("127.0.0.1", server.port())).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        stream.set_nodelay(true).unwrap();
        Self {
            writer: stream.try_clone().unwrap(),
            reader: BufReader::new(stream),
        }
    }

    fn send(&mut self, method: &str, path: &str, body: &Value) -> Response {
        let body = if body.is_null() {
            String::new()
        } else {
            body.to_string()
        };
        write!(
            self.writer,
            "{method} {path} HTTP/1.1\r\nhost: x\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        read_response(&mut self.reader)
    }
}

fn post(server: &ModelServer, path: &str, body: &Value) -> Response {
    Client::connect(server).send("POST", path, body)
}

fn write_tool() -> Script {
    Script::tool_then_text(
        "Write",
        json!({"file_path": "/p/hello.txt", "content": "hi\n"}),
        "I wrote hello.txt.",
    )
}

const TOOLS: &str = r#"[{"name": "Write"}]"#;

#[test]
fn anthropic_streams_a_tool_call_then_the_final_text_and_logs_the_prompt() {
    let server = ModelServer::start(write_tool());
    let tools: Value = serde_json::from_str(TOOLS).unwrap();
    let prompt = json!({"stream": true, "tools": tools, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "<reminder>"}, {"type": "text", "text": "write it"}]},
    ]});
    let mut client = Client::connect(&server);
    let first = client.send("POST", "/v1/messages?beta=true", &prompt);
    assert_eq!(first.status, 200);
    let names: Vec<_> = first
        .events()
        .into_iter()
        .map(|(name, _)| name.unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    let events = first.events();
    assert_eq!(events[1].1["content_block"]["name"], "Write");
    assert_eq!(
        serde_json::from_str::<Value>(events[2].1["delta"]["partial_json"].as_str().unwrap())
            .unwrap(),
        json!({"file_path": "/p/hello.txt", "content": "hi\n"})
    );
    assert_eq!(events[4].1["delta"]["stop_reason"], "tool_use");
    // The tool result comes back on the same connection: the final text, end of turn.
    let result = json!({"stream": true, "tools": tools, "messages": [
        prompt["messages"][0],
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Write", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]},
    ]});
    let second = client.send("POST", "/v1/messages?beta=true", &result);
    let events = second.events();
    assert_eq!(events[2].1["delta"]["text"], "I wrote hello.txt.");
    assert_eq!(events[4].1["delta"]["stop_reason"], "end_turn");
    // A request offering no tools is a side request (a title), unstreamed here.
    let side = client.send("POST", "/v1/messages", &json!({"messages": []}));
    let side: Value = serde_json::from_str(&side.body).unwrap();
    assert_eq!(side["content"][0]["text"], "Scripted title");
    assert_eq!(side["stop_reason"], "end_turn");
    let log = server.requests();
    assert_eq!(
        log.iter().map(|r| r.answered).collect::<Vec<_>>(),
        ["first", "after_tool", "side"]
    );
    assert_eq!(log[0].dialect, Some(Dialect::Anthropic));
    assert_eq!(log[0].path, "/v1/messages?beta=true");
    assert_eq!(log[0].user_texts(), ["<reminder>", "write it"]);
    assert!(log[1].has_tool_result() && !log[0].has_tool_result());
}

#[test]
fn responses_streams_an_escalated_function_call_then_a_message() {
    let escalate = json!({"cmd": "touch x", "sandbox_permissions": "require_escalated", "justification": "why"});
    let server = ModelServer::start(Script::tool_then_text(
        "exec_command",
        escalate.clone(),
        "done",
    ));
    let user = json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "make x"}]});
    let first = post(
        &server,
        "/v1/responses",
        &json!({"tools": [{"name": "exec_command"}], "input": [user]}),
    );
    let events = first.events();
    let names: Vec<_> = events
        .iter()
        .map(|(name, _)| name.clone().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "response.created",
            "response.output_item.done",
            "response.completed"
        ]
    );
    let call = &events[1].1["item"];
    assert_eq!(call["type"], "function_call");
    assert_eq!(call["name"], "exec_command");
    assert_eq!(
        serde_json::from_str::<Value>(call["arguments"].as_str().unwrap()).unwrap(),
        escalate
    );
    assert_eq!(events[2].1["response"]["output"][0], *call);
    assert_eq!(events[2].1["response"]["status"], "completed");
    let after = post(
        &server,
        "/v1/responses",
        &json!({"tools": [{"name": "exec_command"}], "input": [
            user, call, {"type": "function_call_output", "call_id": call["call_id"], "output": "ok"},
        ]}),
    );
    let events = after.events();
    assert_eq!(events[2].1["delta"], "done");
    assert_eq!(
        events.last().unwrap().1["response"]["output"][0]["content"][0]["text"],
        "done"
    );
    let log = server.requests();
    assert_eq!(log[0].user_texts(), ["make x"]);
    assert_eq!(
        log.iter().map(|r| r.answered).collect::<Vec<_>>(),
        ["first", "after_tool"]
    );
}

#[test]
fn chat_completions_stream_the_edit_and_answer_unstreamed_side_requests() {
    let edit = "hello.txt\n```\nhi\n```\n";
    let server = ModelServer::start(Script::text(edit));
    let streamed = post(
        &server,
        "/v1/chat/completions",
        &json!({"stream": true, "messages": [
            {"role": "system", "content": "be whole"}, {"role": "user", "content": "create hello.txt"},
        ]}),
    );
    let events = streamed.events();
    assert_eq!(events[0].1["choices"][0]["delta"]["content"], edit);
    assert_eq!(events[1].1["choices"][0]["finish_reason"], "stop");
    assert_eq!(events[2].1, json!("[DONE]"));
    let side = post(
        &server,
        "/v1/chat/completions",
        &json!({"messages": [{"role": "user", "content": "commit message"}]}),
    );
    let side: Value = serde_json::from_str(&side.body).unwrap();
    assert_eq!(side["choices"][0]["message"]["content"], "Scripted title");
    let log = server.requests();
    assert_eq!(log[0].user_texts(), ["create hello.txt"]);
    assert_eq!(
        log.iter().map(|r| r.answered).collect::<Vec<_>>(),
        ["first", "side"]
    );
}

/// `{serial}` in a text names each request: a stateless script that creates a new file in
/// every turn (Aider asks only before creating one).
#[test]
fn a_text_names_the_request_it_answers() {
    let server = ModelServer::start(Script::text(&format!("hello-{}.txt", model::SERIAL)));
    let ask = json!({"stream": true, "messages": [{"role": "user", "content": "again"}]});
    let texts: Vec<Value> = (0..2)
        .map(|_| post(&server, "/v1/chat/completions", &ask).events()[0].1["choices"][0]["delta"]["content"].clone())
        .collect();
    assert_eq!(texts, [json!("hello-1.txt"), json!("hello-2.txt")]);
}

#[test]
fn errors_come_in_each_dialects_shape_with_their_status() {
    let server = ModelServer::start(Script::new(
        Reply::Error {
            status: 400,
            message: "scripted failure".to_owned(),
        },
        Reply::Text(String::new()),
    ));
    let tools = json!([{"name": "t"}]);
    let anthropic = post(
        &server,
        "/v1/messages",
        &json!({"stream": true, "tools": tools, "messages": []}),
    );
    assert_eq!(anthropic.status, 400);
    assert_eq!(
        serde_json::from_str::<Value>(&anthropic.body).unwrap(),
        json!({"type": "error", "error": {"type": "invalid_request_error", "message": "scripted failure"}})
    );
    let openai = post(
        &server,
        "/v1/responses",
        &json!({"tools": tools, "input": []}),
    );
    assert_eq!(openai.status, 400);
    assert_eq!(
        serde_json::from_str::<Value>(&openai.body).unwrap()["error"]["message"],
        "scripted failure"
    );
}

#[test]
fn a_slow_stream_paces_its_pieces_and_ends_when_the_server_stops() {
    let server = ModelServer::start(Script::new(
        Reply::Slow {
            piece: "word ".to_owned(),
            pieces: 1000,
            every: Duration::from_millis(100),
        },
        Reply::Text(String::new()),
    ));
    let stream = TcpStream::connect(("127.0.0.1", server.port())).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let body = json!({"stream": true, "messages": [{"role": "user", "content": "go"}]}).to_string();
    write!(
        &stream,
        "POST /v1/chat/completions HTTP/1.1\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reader = BufReader::new(stream);
    let started = Instant::now();
    let mut pieces = 0;
    let mut line = String::new();
    while pieces < 3 {
        line.clear();
        reader.read_line(&mut line).unwrap();
        pieces += usize::from(line.contains("\"content\":\"word \""));
    }
    // Three pieces take at least two pauses.
    assert!(
        started.elapsed() >= Duration::from_millis(200),
        "{:?}",
        started.elapsed()
    );
    let stopping = Instant::now();
    drop(server);
    assert!(
        stopping.elapsed() < Duration::from_secs(2),
        "{:?}",
        stopping.elapsed()
    );
    let mut rest = String::new();
    let _ = reader.read_to_string(&mut rest);
    assert!(!rest.contains("[DONE]"), "the stream finished: {rest}");
}

#[test]
fn connectivity_checks_unscripted_paths_and_the_request_budget() {
    let server = ModelServer::start(Script::text("hi"));
    let mut client = Client::connect(&server);
    let head = client.send("GET", "/", &Value::Null);
    assert_eq!((head.status, head.body.as_str()), (200, ""));
    let unknown = client.send("POST", "/v1/models", &json!({}));
    assert_eq!(
        (unknown.status, unknown.body.as_str()),
        (404, "not scripted")
    );
    let log = server.requests();
    assert_eq!(
        log.iter()
            .map(|r| (r.method.as_str(), r.path.as_str(), r.answered, r.dialect))
            .collect::<Vec<_>>(),
        [
            ("GET", "/", "none", None),
            ("POST", "/v1/models", "none", None)
        ]
    );
    for _ in log.len()..MAX_REQUESTS {
        client.send("GET", "/", &Value::Null);
    }
    let over = client.send("POST", "/v1/messages", &json!({"messages": []}));
    assert_eq!(
        (over.status, over.body.as_str()),
        (503, "request budget of the scripted model spent")
    );
    assert_eq!(server.requests().last().unwrap().answered, "over budget");
}

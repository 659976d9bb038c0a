//! Canonical JSON (RFC 0002 §5.3): golden vectors, the strict parser, the fail-closed decoder
//! for stored artifacts, and digest syntax.
//!
//! Every golden digest below was computed independently of this crate with Python:
//!
//! ```text
//! python3 -c 'import json,hashlib; b=(json.dumps(OBJ, sort_keys=True, separators=(",",":"),
//!             ensure_ascii=False)+"\n").encode(); print("sha256:"+hashlib.sha256(b).hexdigest())'
//! ```
//!
//! and the expected canonical texts are that same `json.dumps` output.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use valp_kernel::canonical::{
    Canonical, CanonicalError, DIGEST_LEN, EMPTY_REPLAY_PREFIX_DIGEST, decode_canonical,
    first_difference, is_digest, sha256_digest,
};
use valp_kernel::json::parse::{MAX_DEPTH, ParseErrorKind};
use valp_kernel::json::write::{WriteError, canonical_bytes, write_int, write_str};
use valp_kernel::json::{Number, ParseError, Value, parse};
use valp_kernel::replay::GenesisRoot;
use valp_kernel::{EventKind, Outcome, reduce};

use support::{event, evidence, genesis, genesis_with, object, string, work_item};

/// Parses `text`, which must be valid JSON.
fn value(text: &str) -> Value {
    parse(text).unwrap_or_else(|error| panic!("{text:?} must parse: {error}"))
}

/// Canonical bytes of a value that must be writable.
fn canonical(value: &Value) -> Vec<u8> {
    canonical_bytes(value).expect("integers only")
}

/// Asserts the canonical text and digest of the JSON `input`, and that the canonical bytes are
/// accepted by the strict decoder and decode to the same value.
fn assert_golden(input: &str, expected_text: &str, expected_digest: &str) {
    let parsed = value(input);
    let bytes = canonical(&parsed);
    assert_eq!(String::from_utf8(bytes.clone()).unwrap(), expected_text);
    assert_eq!(sha256_digest(&bytes), expected_digest);
    assert_eq!(decode_canonical(&bytes), Ok(parsed));
}

fn parse_error(text: &str) -> ParseError {
    parse(text).expect_err(text)
}

fn assert_parse_error(text: &str, offset: usize, kind: ParseErrorKind) {
    assert_eq!(
        parse_error(text),
        ParseError { offset, kind },
        "parsing {text:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Golden vectors

#[test]
fn empty_replay_prefix_digest() {
    let prefix = object([
        ("schema_version", string("valp-kernel-replay-prefix.v1")),
        ("entries", Value::Array(Vec::new())),
    ]);
    let bytes = canonical(&prefix);
    assert_eq!(
        bytes,
        b"{\"entries\":[],\"schema_version\":\"valp-kernel-replay-prefix.v1\"}\n"
    );
    assert_eq!(bytes.len(), 63);
    assert_eq!(
        sha256_digest(&bytes),
        "sha256:fa1f226ad4960367691ffda3176c5f45a463c102a791799d33dcf2bbfa08b54d"
    );
    assert_eq!(EMPTY_REPLAY_PREFIX_DIGEST, sha256_digest(&bytes));
}

#[test]
fn empty_replay_prefix_without_lf_or_with_crlf_is_a_different_digest() {
    let body = b"{\"entries\":[],\"schema_version\":\"valp-kernel-replay-prefix.v1\"}";
    assert_eq!(
        sha256_digest(body),
        "sha256:643a7bf7fca4e30aa8359697ad04985409ee69d2b226da3d06e780157212d29f"
    );
    let mut crlf = body.to_vec();
    crlf.extend_from_slice(b"\r\n");
    assert_eq!(
        sha256_digest(&crlf),
        "sha256:51d352fdb10e41236fb6be98ad0fcdaccc258361f803f9618b1fc60549feb91c"
    );
    assert_ne!(sha256_digest(&crlf), EMPTY_REPLAY_PREFIX_DIGEST);
    // The strict decoder refuses both spellings.
    assert_eq!(decode_canonical(body), Err(CanonicalError::MissingFinalLf));
    assert_eq!(
        decode_canonical(&crlf),
        Err(CanonicalError::CarriageReturn { offset: 62 })
    );
}

#[test]
fn empty_object() {
    assert_golden(
        "{}",
        "{}\n",
        "sha256:ca3d163bab055381827226140568f3bef7eaac187cebd76878e0b63e9e442356",
    );
    assert_golden(
        " { } ",
        "{}\n",
        "sha256:ca3d163bab055381827226140568f3bef7eaac187cebd76878e0b63e9e442356",
    );
}

#[test]
fn keys_sorted_and_non_ascii_raw() {
    assert_golden(
        r#"{"b":1,"a":"é"}"#,
        "{\"a\":\"é\",\"b\":1}\n",
        "sha256:2f8b31e48ae7ba3230b3c8499e02f919d89bdfebec9f9bf3872e4dee8458bf14",
    );
    // é is the two raw bytes C3 A9, never \u00e9.
    let bytes = canonical(&value(r#"{"a":"\u00e9"}"#));
    assert_eq!(bytes, b"{\"a\":\"\xc3\xa9\"}\n");
}

#[test]
fn arrays_keep_their_order() {
    assert_golden(
        r#"{"a":[3,1,2]}"#,
        "{\"a\":[3,1,2]}\n",
        "sha256:5ae4c3e1eb1311fd055468ef8c26bdd9056346355505ac70258cbc1ab629de37",
    );
}

#[test]
fn keys_sorted_at_every_depth() {
    assert_golden(
        r#"{"b":1,"a":{"d":2,"c":3}}"#,
        "{\"a\":{\"c\":3,\"d\":2},\"b\":1}\n",
        "sha256:1acbc30524acbadd8e09810b2681e9ffabb00503dfef4f942d65ff45b32dc051",
    );
    assert_golden(
        "{ \"z\" : [ { \"y\" : 1 , \"x\" : [ { \"b\" : null , \"a\" : true } ] } ] ,\n\t\"m\" : { \"k\" : { \"j\" : false } } }",
        "{\"m\":{\"k\":{\"j\":false}},\"z\":[{\"x\":[{\"a\":true,\"b\":null}],\"y\":1}]}\n",
        "sha256:c2d7e65d1d9d69cd32ec2fb2d7834740eb914ec813d5cdaad3ed303aeb52893a",
    );
}

#[test]
fn short_escapes_and_unescaped_solidus() {
    // The string q"b\n<LF>r<CR>t<TAB>b<BS>f<FF>/ (the \n after the backslash is literal).
    let text = "q\"b\\n\nr\rt\tb\u{8}f\u{c}/";
    let parsed = object([("s", string(text))]);
    let bytes = canonical(&parsed);
    assert_eq!(
        String::from_utf8(bytes.clone()).unwrap(),
        r#"{"s":"q\"b\\n\nr\rt\tb\bf\f/"}"#.to_owned() + "\n"
    );
    assert_eq!(
        sha256_digest(&bytes),
        "sha256:0b11e50653bdba182c048e51438fcb9de673acd9ba2fa612ff159588f2173236"
    );
    assert_eq!(decode_canonical(&bytes), Ok(parsed));
}

#[test]
fn every_c0_control_is_escaped_with_lowercase_hex() {
    let all_c0: String = (0u8..0x20).map(char::from).collect();
    let parsed = object([("s", Value::String(all_c0))]);
    let bytes = canonical(&parsed);
    let expected = concat!(
        r#"{"s":"\u0000\u0001\u0002\u0003\u0004\u0005\u0006\u0007\b\t\n\u000b\f\r\u000e\u000f"#,
        r#"\u0010\u0011\u0012\u0013\u0014\u0015\u0016\u0017\u0018\u0019\u001a\u001b\u001c"#,
        r#"\u001d\u001e\u001f"}"#,
        "\n"
    );
    assert_eq!(String::from_utf8(bytes.clone()).unwrap(), expected);
    assert_eq!(bytes.len(), 181);
    assert_eq!(
        sha256_digest(&bytes),
        "sha256:9bed16036b786cd666b97a7174636ec3ae0e87a2fbe944cce8173ccc91a9af2f"
    );
    assert_eq!(decode_canonical(&bytes), Ok(parsed));
}

#[test]
fn write_str_escapes_each_c0_byte_individually() {
    for byte in 0u8..0x20 {
        let mut out = Vec::new();
        write_str(&mut out, &char::from(byte).to_string());
        let expected = match byte {
            0x08 => "\"\\b\"".to_owned(),
            0x09 => "\"\\t\"".to_owned(),
            0x0a => "\"\\n\"".to_owned(),
            0x0c => "\"\\f\"".to_owned(),
            0x0d => "\"\\r\"".to_owned(),
            _ => format!("\"\\u{byte:04x}\""),
        };
        assert_eq!(
            String::from_utf8(out).unwrap(),
            expected,
            "byte {byte:#04x}"
        );
    }
    let mut out = Vec::new();
    write_str(&mut out, "a\"b\\c");
    assert_eq!(out, br#""a\"b\\c""#);
}

#[test]
fn del_line_separators_and_non_ascii_are_raw() {
    let text = "\u{7f}\u{2028}\u{2029}é€";
    let parsed = object([("s", string(text))]);
    let bytes = canonical(&parsed);
    let mut expected = b"{\"s\":\"".to_vec();
    expected.extend_from_slice(text.as_bytes());
    expected.extend_from_slice(b"\"}\n");
    assert_eq!(bytes, expected);
    assert_eq!(bytes.len(), 21);
    assert_eq!(
        sha256_digest(&bytes),
        "sha256:ffb04efa6cc0d29152b152153c34dabc327b7112f2a7146c5f057af66009102f"
    );
    // The escaped spellings parse to the same string but are not canonical.
    let escaped = value(r#"{"s":"\u007f\u2028\u2029\u00e9\u20ac"}"#);
    assert_eq!(escaped, parsed);
}

#[test]
fn astral_characters_are_raw_and_surrogate_pairs_decode() {
    assert_golden(
        r#"{"s":"\ud83d\ude00\ud834\udd1e"}"#,
        "{\"s\":\"😀𝄞\"}\n",
        "sha256:933bfbe3794fd6c7ac249e4d429f25f3ae064f55e821bfed882f54a5b671e6aa",
    );
    let bytes = canonical(&value("\"😀\""));
    assert_eq!(bytes, b"\"\xf0\x9f\x98\x80\"\n");
}

#[test]
fn integers_including_i64_and_i128_extremes() {
    assert_golden(
        "{\"a\":[-1,0,1,-9223372036854775808,9223372036854775807,\
         -170141183460469231731687303715884105728,170141183460469231731687303715884105727]}",
        "{\"a\":[-1,0,1,-9223372036854775808,9223372036854775807,\
         -170141183460469231731687303715884105728,170141183460469231731687303715884105727]}\n",
        "sha256:aad0b47d4db35a7c588b0953e1efbb66337d02baf0f92f0f4f4e5dd625e7d284",
    );
    for (number, text) in [
        (0, "0"),
        (-1, "-1"),
        (10, "10"),
        (i128::from(i64::MAX), "9223372036854775807"),
        (i128::from(i64::MIN), "-9223372036854775808"),
        (i128::from(u64::MAX), "18446744073709551615"),
        (i128::from(u64::MAX) + 1, "18446744073709551616"),
        (i128::MAX, "170141183460469231731687303715884105727"),
        (i128::MIN, "-170141183460469231731687303715884105728"),
    ] {
        let mut out = Vec::new();
        write_int(&mut out, number);
        assert_eq!(String::from_utf8(out).unwrap(), text);
        assert_eq!(value(text), Value::Number(Number::Int(number)));
    }
}

#[test]
fn keys_sort_by_code_point() {
    // Python sorts "\ue000" before "😀" (code point order); UTF-16 order would swap them.
    assert_golden(
        r#"{"😀":2,"\ue000":1,"a":3,"B":4,"b":5,"Z":6,"":7}"#,
        "{\"\":7,\"B\":4,\"Z\":6,\"a\":3,\"b\":5,\"\u{e000}\":1,\"😀\":2}\n",
        "sha256:fb7bc863b1eff8a0efa972a00c14c3c95b5fa334f92760fc5762e1f058ad98fc",
    );
}

#[test]
fn canonical_output_has_no_whitespace_outside_strings() {
    let pretty = "{\n  \"list\" : [ 1 ,\t2 ],\r\n  \"obj\" : { \"k\" : \"a b\" }\n}\n";
    let bytes = canonical(&value(pretty));
    assert_eq!(bytes, b"{\"list\":[1,2],\"obj\":{\"k\":\"a b\"}}\n");
}

/// Protocol digest §6.5, recomputed independently with the Python formula above: the genesis
/// of `inst-1`/`TASK-001`/epoch 1 and the acceptance of `evt-1` (`routing_validation_started`).
#[test]
fn kernel_artifact_golden_digests() {
    let state0 = genesis();
    assert_eq!(
        state0.digest(),
        "sha256:f98b995565219829b07e935d179391011b7a123bc07a984942831eeabca061a5"
    );
    assert_eq!(
        GenesisRoot {
            state: state0.clone()
        }
        .digest(),
        "sha256:04286a06bc97bd639ff96532d4f88a82f64139bb468cb1507e2ae2e42dfc2ccc"
    );
    let event = event("evt-1", EventKind::RoutingValidationStarted, 0);
    let Outcome::Accepted(accepted) = reduce(&state0, &event, &[]) else {
        panic!("evt-1 must be accepted");
    };
    assert_eq!(
        accepted.input_digest,
        "sha256:1ebad39fee25d7d4f53622a9289467f3e1c10956ecb266be9bf8c28182b786e9"
    );
    assert_eq!(
        accepted.result_digest,
        "sha256:29b7a0b16d274d7620e930bb10fb5282223613ad619278cc4a76fd65528caed7"
    );
    assert_eq!(
        Outcome::Accepted(accepted.clone()).digest(),
        "sha256:9bdfdeef85e22ee33be8806fc04cdf0b58bf40808f9f77e7ec5668359b517af3"
    );
    assert_eq!(
        accepted.state.digest(),
        "sha256:57d428b807056d0b4ed0f96a42a794404232baa7602ad8593265852fc02e5724"
    );
}

/// With a work item the result digest binds the full next State (with `accepted_events: []`).
#[test]
fn result_digest_with_work_items_binds_the_full_state() {
    let state0 = genesis_with(vec![work_item(
        "wi-1",
        valp_kernel::Requirement::Required,
        &[],
    )]);
    assert_eq!(
        state0.digest(),
        "sha256:3da521444a2d5d3aaf8a923e203ef0df1a2b56f1c6a8345ab1822c71cb64ad33"
    );
    let event = event("evt-1", EventKind::RoutingValidationStarted, 0);
    let Outcome::Accepted(accepted) = reduce(&state0, &event, &[]) else {
        panic!("evt-1 must be accepted");
    };
    assert_eq!(
        accepted.result_digest,
        "sha256:1d59fba016fe93e2ef9c31a12755aa7ab8f4cad4a7c50575037235ffebba6831"
    );
    assert_eq!(
        accepted.state.digest(),
        "sha256:f1a389a50d520425ec77bef9cc3ecd2d0250acca1ca42f490bbb4fd43dbb9290"
    );
}

#[test]
fn rejected_result_golden_bytes() {
    let state0 = genesis();
    let event = event("evt-2", EventKind::RoutingValidationStarted, 5);
    let outcome = reduce(&state0, &event, &[]);
    let expected = concat!(
        r#"{"error_code":"VALP-E-STATE-CONFLICT","#,
        r#""input_digest":"sha256:fe1917217eeaab0945d00cc741b3315b1d68dd11c1c4ff5e0f28f24ebfa3277e","#,
        r#""schema_version":"valp-kernel-result.v1","state":{"accepted_events":[],"#,
        r#""installation_id":{"kind":"installation","value":"inst-1"},"leader_epoch":1,"#,
        r#""protocol_version":"0.3.0","revision":0,"schema_version":"valp-kernel-state.v1","#,
        r#""status":"published","task_id":{"kind":"task","value":"TASK-001"}},"#,
        r#""variant":"rejected"}"#,
        "\n"
    );
    assert_eq!(
        String::from_utf8(outcome.canonical_bytes()).unwrap(),
        expected
    );
    assert_eq!(
        outcome.digest(),
        "sha256:842eae4d2318f962336af38a582356353b0e6cc0421fa3db3b2261d72cf7fe7a"
    );
}

#[test]
fn evidence_set_order_does_not_change_the_input_digest() {
    let state = genesis();
    let event = event("evt-1", EventKind::RoutingValidationStarted, 0);
    let set = [evidence("ev-a"), evidence("ev-b"), evidence("ev-c")];
    let forward = reduce(&state, &event, &set);
    let reversed: Vec<_> = set.iter().rev().cloned().collect();
    let backward = reduce(&state, &event, &reversed);
    assert_eq!(forward.input_digest(), backward.input_digest());
    assert_eq!(forward.canonical_bytes(), backward.canonical_bytes());
    // ... but the EvidenceSet is bound: dropping one element changes the digest.
    let fewer = reduce(&state, &event, &set[..2]);
    assert_ne!(forward.input_digest(), fewer.input_digest());
    // Other arrays keep caller order.
    assert_ne!(
        canonical(&value("[1,2]")),
        canonical(&value("[2,1]")),
        "arrays are not sorted"
    );
}

// ---------------------------------------------------------------------------------------------
// Parser

#[test]
fn parser_accepts_literals_and_whitespace() {
    assert_eq!(value(" \t\r\nnull \n"), Value::Null);
    assert_eq!(value("true"), Value::Bool(true));
    assert_eq!(value("false"), Value::Bool(false));
    assert_eq!(value("\"\\/\""), string("/"));
    assert_eq!(value("[]"), Value::Array(Vec::new()));
    assert_eq!(value("-0"), Value::Number(Number::Int(0)));
}

#[test]
fn parser_duplicate_key() {
    assert_parse_error(
        r#"{"a":1,"a":2}"#,
        7,
        ParseErrorKind::DuplicateKey("a".to_owned()),
    );
    // Escaped spellings of the same key are the same key.
    assert_parse_error(
        r#"{"a":1,"\u0061":2}"#,
        7,
        ParseErrorKind::DuplicateKey("a".to_owned()),
    );
    assert_parse_error(
        r#"{"x":{"k":1,"k":1}}"#,
        12,
        ParseErrorKind::DuplicateKey("k".to_owned()),
    );
}

#[test]
fn parser_trailing_characters() {
    assert_parse_error("{} x", 3, ParseErrorKind::TrailingCharacters);
    assert_parse_error("1 2", 2, ParseErrorKind::TrailingCharacters);
    assert_parse_error("{}{}", 2, ParseErrorKind::TrailingCharacters);
    assert_parse_error("[1]]", 3, ParseErrorKind::TrailingCharacters);
}

#[test]
fn parser_lone_surrogates() {
    assert_parse_error(r#""\ud800""#, 7, ParseErrorKind::LoneSurrogate);
    assert_parse_error(r#""\udc00""#, 7, ParseErrorKind::LoneSurrogate);
    assert_parse_error(r#""\ud800x""#, 7, ParseErrorKind::LoneSurrogate);
    assert_parse_error(r#""\ud800\u0041""#, 13, ParseErrorKind::LoneSurrogate);
    assert_parse_error(r#""\ud800\ud800""#, 13, ParseErrorKind::LoneSurrogate);
}

#[test]
fn parser_invalid_escapes() {
    assert_parse_error(r#""\x""#, 2, ParseErrorKind::InvalidEscape);
    assert_parse_error(r#""\U0041""#, 2, ParseErrorKind::InvalidEscape);
    assert_parse_error(r#""\'""#, 2, ParseErrorKind::InvalidEscape);
    assert_parse_error(r#""\u12g4""#, 3, ParseErrorKind::InvalidEscape);
    assert_parse_error(r#""ab\u00zz""#, 5, ParseErrorKind::InvalidEscape);
    assert_parse_error(r#""ab\u00""#, 5, ParseErrorKind::UnexpectedEnd);
    assert_parse_error("\"\\u00", 3, ParseErrorKind::UnexpectedEnd);
}

#[test]
fn parser_raw_control_characters_in_strings() {
    assert_parse_error("\"a\tb\"", 2, ParseErrorKind::ControlCharacter(0x09));
    assert_parse_error("\"\n\"", 1, ParseErrorKind::ControlCharacter(0x0a));
    assert_parse_error("\"ab\u{0}\"", 3, ParseErrorKind::ControlCharacter(0));
    assert_parse_error("{\"k\u{1f}\":1}", 3, ParseErrorKind::ControlCharacter(0x1f));
    // DEL is not a control character for JSON.
    assert_eq!(value("\"\u{7f}\""), string("\u{7f}"));
}

#[test]
fn parser_numbers() {
    // Leading zero: "0" is a complete number, the next digit is left over.
    assert_parse_error("01", 1, ParseErrorKind::TrailingCharacters);
    assert_parse_error("[01]", 2, ParseErrorKind::UnexpectedChar('1'));
    assert_parse_error("-01", 2, ParseErrorKind::TrailingCharacters);
    assert_parse_error("-", 1, ParseErrorKind::InvalidNumber);
    assert_parse_error("[-]", 2, ParseErrorKind::InvalidNumber);
    assert_parse_error("1.", 2, ParseErrorKind::InvalidNumber);
    assert_parse_error("1.e5", 2, ParseErrorKind::InvalidNumber);
    assert_parse_error("1e", 2, ParseErrorKind::InvalidNumber);
    assert_parse_error("1e+", 3, ParseErrorKind::InvalidNumber);
    assert_parse_error(".5", 0, ParseErrorKind::UnexpectedChar('.'));
    assert_parse_error("+1", 0, ParseErrorKind::UnexpectedChar('+'));
}

#[test]
fn parser_refuses_nan_and_infinity() {
    assert_parse_error("NaN", 0, ParseErrorKind::UnexpectedChar('N'));
    assert_parse_error("Infinity", 0, ParseErrorKind::UnexpectedChar('I'));
    assert_parse_error("-Infinity", 1, ParseErrorKind::InvalidNumber);
    assert_parse_error(r#"{"a":NaN}"#, 5, ParseErrorKind::UnexpectedChar('N'));
    assert_parse_error("nul", 0, ParseErrorKind::UnexpectedChar('n'));
    assert_parse_error("tru", 0, ParseErrorKind::UnexpectedChar('t'));
}

#[test]
fn parser_unterminated_values() {
    assert_parse_error("", 0, ParseErrorKind::UnexpectedEnd);
    assert_parse_error("   ", 3, ParseErrorKind::UnexpectedEnd);
    assert_parse_error("\"abc", 4, ParseErrorKind::UnexpectedEnd);
    assert_parse_error("\"abc\\", 5, ParseErrorKind::UnexpectedEnd);
    assert_parse_error("[1,2", 4, ParseErrorKind::UnexpectedEnd);
    assert_parse_error("[", 1, ParseErrorKind::UnexpectedEnd);
    assert_parse_error(r#"{"a":1"#, 6, ParseErrorKind::UnexpectedEnd);
    assert_parse_error(r#"{"a""#, 4, ParseErrorKind::UnexpectedEnd);
    assert_parse_error(r#"{"a":"#, 5, ParseErrorKind::UnexpectedEnd);
    assert_parse_error("{", 1, ParseErrorKind::UnexpectedEnd);
}

#[test]
fn parser_structural_errors() {
    assert_parse_error("[1,]", 3, ParseErrorKind::UnexpectedChar(']'));
    assert_parse_error(r#"{"a":1,}"#, 7, ParseErrorKind::UnexpectedChar('}'));
    assert_parse_error(r"{a:1}", 1, ParseErrorKind::UnexpectedChar('a'));
    assert_parse_error(r#"{"a" 1}"#, 5, ParseErrorKind::UnexpectedChar('1'));
    assert_parse_error(r#"{"a":1 "b":2}"#, 7, ParseErrorKind::UnexpectedChar('"'));
    assert_parse_error("[1 2]", 3, ParseErrorKind::UnexpectedChar('2'));
    assert_parse_error("'a'", 0, ParseErrorKind::UnexpectedChar('\''));
    assert_parse_error("é", 0, ParseErrorKind::UnexpectedChar('é'));
}

#[test]
fn parser_nesting_limit() {
    assert_eq!(MAX_DEPTH, 128);
    let at_limit = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
    assert!(parse(&at_limit).is_ok());
    let too_deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
    assert_parse_error(&too_deep, MAX_DEPTH, ParseErrorKind::TooDeep);
    // Objects count too: each `{"a":` opens one level (5 bytes).
    let objects_at_limit = "{\"a\":".repeat(MAX_DEPTH) + "1" + &"}".repeat(MAX_DEPTH);
    assert!(parse(&objects_at_limit).is_ok());
    let objects_too_deep = "{\"a\":".repeat(MAX_DEPTH + 1) + "1" + &"}".repeat(MAX_DEPTH + 1);
    assert_parse_error(&objects_too_deep, 5 * MAX_DEPTH, ParseErrorKind::TooDeep);
    // Mixed: 128 arrays then one object.
    let mixed = "[".repeat(MAX_DEPTH) + "{}" + &"]".repeat(MAX_DEPTH);
    assert_parse_error(&mixed, MAX_DEPTH, ParseErrorKind::TooDeep);
    // A hostile depth does not exhaust the stack.
    let hostile = "[".repeat(100_000);
    assert_parse_error(&hostile, MAX_DEPTH, ParseErrorKind::TooDeep);
}

#[test]
fn floats_parse_to_other_and_are_not_written() {
    for text in ["1.5", "1e3", "1E3", "-0.0", "0.0", "1e-7", "2.50"] {
        assert_eq!(
            value(text),
            Value::Number(Number::Other(text.to_owned())),
            "{text}"
        );
        assert_eq!(
            canonical_bytes(&value(text)),
            Err(WriteError::NonInteger(text.to_owned()))
        );
    }
    // Integers outside i128 are kept as text and refused as well.
    let too_big = "170141183460469231731687303715884105728";
    assert_eq!(
        value(too_big),
        Value::Number(Number::Other(too_big.to_owned()))
    );
    assert_eq!(
        canonical_bytes(&value(too_big)),
        Err(WriteError::NonInteger(too_big.to_owned()))
    );
    // Nested floats are found too.
    assert_eq!(
        canonical_bytes(&value(r#"{"a":[1,{"b":2.0}]}"#)),
        Err(WriteError::NonInteger("2.0".to_owned()))
    );
}

// ---------------------------------------------------------------------------------------------
// decode_canonical

#[test]
fn decode_canonical_accepts_canonical_artifacts() {
    assert_eq!(decode_canonical(b"{}\n"), Ok(value("{}")));
    assert_eq!(decode_canonical(b"null\n"), Ok(Value::Null));
    assert_eq!(
        decode_canonical(b"-5\n"),
        Ok(Value::Number(Number::Int(-5)))
    );
    let state = genesis();
    let bytes = state.canonical_bytes();
    assert_eq!(
        decode_canonical(&bytes).map(|decoded| canonical(&decoded)),
        Ok(bytes)
    );
}

/// Asserts that `decode_canonical` refuses each input with exactly the given error.
fn assert_refused(cases: &[(&[u8], CanonicalError)]) {
    for (bytes, error) in cases {
        assert_eq!(
            decode_canonical(bytes).as_ref(),
            Err(error),
            "{}",
            String::from_utf8_lossy(bytes)
        );
    }
}

fn not_canonical(offset: usize) -> CanonicalError {
    CanonicalError::NotCanonical { offset }
}

fn parse_failure(offset: usize, kind: ParseErrorKind) -> CanonicalError {
    CanonicalError::Parse(ParseError { offset, kind })
}

fn non_integer(text: &str) -> CanonicalError {
    CanonicalError::NonInteger(WriteError::NonInteger(text.to_owned()))
}

#[test]
fn decode_canonical_refuses_a_byte_order_mark() {
    assert_refused(&[
        (b"\xef\xbb\xbf{}\n", CanonicalError::ByteOrderMark),
        // The BOM is reported before a CR or a missing LF.
        (b"\xef\xbb\xbf{}\r", CanonicalError::ByteOrderMark),
    ]);
}

#[test]
fn decode_canonical_refuses_carriage_returns_anywhere() {
    let cr = |offset| CanonicalError::CarriageReturn { offset };
    assert_refused(&[
        (b"{}\r\n", cr(2)),
        (b"{\"a\":\"\r\"}\n", cr(6)),
        (b"\r{}\n", cr(0)),
        // Even without a final LF the CR is reported first.
        (b"{}\r", cr(2)),
    ]);
}

#[test]
fn decode_canonical_requires_exactly_one_final_lf() {
    let lf = |offset| CanonicalError::UnexpectedLf { offset };
    assert_refused(&[
        (b"{}", CanonicalError::MissingFinalLf),
        (b"", CanonicalError::MissingFinalLf),
        (b"{}\n\n", lf(2)),
        (b"{}\n{}\n", lf(2)),
        (b"\n{}\n", lf(0)),
        (b"\n", parse_failure(0, ParseErrorKind::UnexpectedEnd)),
    ]);
}

#[test]
fn decode_canonical_refuses_non_canonical_spacing_order_and_escapes() {
    assert_refused(&[
        (b"{\"a\": 1}\n", not_canonical(5)),
        (b"{\"a\" :1}\n", not_canonical(4)),
        (b" {}\n", not_canonical(0)),
        (b"{} \n", not_canonical(2)),
        (b"{\"b\":1,\"a\":2}\n", not_canonical(2)),
        (b"[1, 2]\n", not_canonical(3)),
        (b"\"\\u00e9\"\n", not_canonical(1)),
        (b"\"\\/\"\n", not_canonical(1)),
        (b"\"\\u001F\"\n", not_canonical(6)),
        // -0 parses as the integer 0, which is written "0".
        (b"-0\n", not_canonical(0)),
    ]);
}

#[test]
fn decode_canonical_refuses_duplicate_keys_and_non_json() {
    assert_refused(&[
        (
            b"{\"a\":1,\"a\":1}\n",
            parse_failure(7, ParseErrorKind::DuplicateKey("a".to_owned())),
        ),
        (
            b"NaN\n",
            parse_failure(0, ParseErrorKind::UnexpectedChar('N')),
        ),
        (
            b"{\"a\":1\n",
            parse_failure(6, ParseErrorKind::UnexpectedEnd),
        ),
    ]);
}

#[test]
fn decode_canonical_refuses_floats() {
    assert_refused(&[
        (b"1.5\n", non_integer("1.5")),
        (b"{\"a\":1e2}\n", non_integer("1e2")),
        (b"[0,-0.0]\n", non_integer("-0.0")),
    ]);
}

#[test]
fn decode_canonical_refuses_invalid_utf8() {
    let invalid = |offset| CanonicalError::InvalidUtf8 { offset };
    assert_refused(&[
        (b"\"\xff\"\n", invalid(1)),
        (b"\"\xc3\"\n", invalid(1)),
        (b"\"ab\xc0\xaf\"\n", invalid(3)),
        (b"\"\xed\xa0\x80\"\n", invalid(1)),
        (b"{\"\xc3\xa9\":\"\xf0\x9f\x98\"}\n", invalid(7)),
    ]);
}

#[test]
fn first_difference_offsets() {
    assert_eq!(first_difference(b"abc", b"abd"), 2);
    assert_eq!(first_difference(b"abc", b"abc"), 3);
    assert_eq!(first_difference(b"ab", b"abc"), 2);
    assert_eq!(first_difference(b"", b"x"), 0);
}

// ---------------------------------------------------------------------------------------------
// Digest syntax

#[test]
fn is_digest_accepts_only_sha256_and_64_lowercase_hex() {
    let hex = "0123456789abcdef".repeat(4);
    assert_eq!(DIGEST_LEN, 71);
    assert!(is_digest(&format!("sha256:{hex}")));
    assert!(is_digest(EMPTY_REPLAY_PREFIX_DIGEST));
    assert!(is_digest(&sha256_digest(b"anything")));
    assert_eq!(sha256_digest(b"").len(), DIGEST_LEN);
    let rejected = [
        String::new(),
        "sha256:".to_owned(),
        format!("sha256:{}", hex.to_uppercase()),
        format!("sha256:{}A", &hex[..63]),
        format!("sha256:{}", &hex[..63]),
        format!("sha256:{hex}0"),
        format!("SHA256:{hex}"),
        format!("sha512:{hex}"),
        format!("sha256-{hex}"),
        format!("sha256 {hex}"),
        format!("{hex}abcdefg"),
        format!("sha256:{}g", &hex[..63]),
        format!("sha256:{}é", &hex[..62]),
        format!(" sha256:{}", &hex[..63]),
    ];
    for text in &rejected {
        assert!(!is_digest(text), "{text:?} must be rejected");
    }
    // The 71-byte lookalikes really are 71 bytes long.
    assert_eq!(rejected[3].len(), 71);
    assert_eq!(rejected[8].len(), 71);
    assert_eq!(rejected[12].len(), 71);
}

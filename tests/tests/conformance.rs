//! The reference kernel's conformance vectors, run through the same code path as
//! `valp conformance`, and the CLI itself.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use std::io::{BufRead, BufReader, Write};

use valp_runtime::conformance::{DeviationFile, run_files};
use valp_tests::{conformance_fixtures, run_valp};

fn no_deviations() -> DeviationFile {
    DeviationFile::parse(
        r#"{"schema_version":"valp-kernel-deviations.v1","deviations":[]}"#,
        "test",
    )
    .unwrap()
}

#[test]
fn every_public_vector_passes_or_matches_a_declared_deviation() {
    let report = run_files(&conformance_fixtures(), &DeviationFile::builtin().unwrap()).unwrap();
    let failures: Vec<_> = report
        .failures()
        .iter()
        .map(|f| format!("{}: {}", f.name, f.message))
        .collect();
    assert!(failures.is_empty(), "{failures:#?}");
    assert_eq!(
        report.summary_line(),
        "conformance: 3291 passed, 3 deviations, 0 failed"
    );
    assert_eq!(report.deviation_counts().get("D1"), Some(&3));
}

#[test]
fn without_deviations_exactly_the_malformed_type_vectors_fail() {
    let report = run_files(&conformance_fixtures()[..1], &no_deviations()).unwrap();
    let mut failed: Vec<_> = report
        .failures()
        .iter()
        .map(|failure| failure.name.as_str())
        .collect();
    failed.sort_unstable();
    assert_eq!(
        failed,
        [
            "malformed_types/event/dispatch-generation-false",
            "malformed_types/event/expected-revision-false",
            "malformed_types/state/state-revision-float",
        ]
    );
    assert!(
        report.failures()[0]
            .message
            .contains("decode error VALP-E-STATE-CONFLICT")
    );
}

/// Copies the first `lines` vectors of the kernel vector file into a temporary `.jsonl`,
/// letting `edit` change each line.
fn vector_file(lines: usize, edit: impl Fn(usize, String) -> String) -> tempfile::NamedTempFile {
    let source = std::fs::File::open(&conformance_fixtures()[0]).unwrap();
    let reader = BufReader::new(flate2::read::GzDecoder::new(source));
    let mut file = tempfile::Builder::new()
        .suffix(".jsonl")
        .tempfile()
        .unwrap();
    for (index, line) in reader.lines().take(lines).enumerate() {
        writeln!(file, "{}", edit(index, line.unwrap())).unwrap();
    }
    file
}

#[test]
fn a_changed_input_fails_with_the_first_differing_byte() {
    // The first vector's event at another expected revision: our Result differs from the
    // recorded one, whose checksum still holds.
    let file = vector_file(2, |index, line| {
        if index == 0 {
            line.replacen("\"expected_revision\":0", "\"expected_revision\":5", 1)
        } else {
            line
        }
    });
    let report = run_files(&[file.path().to_owned()], &no_deviations()).unwrap();
    assert_eq!(
        report.summary_line(),
        "conformance: 1 passed, 0 deviations, 1 failed"
    );
    let failure = &report.failures()[0];
    assert!(failure.location.ends_with(":1"), "{}", failure.location);
    assert!(
        failure.message.starts_with("first difference at byte "),
        "{}",
        failure.message
    );
}

#[test]
fn a_tampered_expected_result_with_a_matching_checksum_reports_the_first_differing_byte() {
    let file = vector_file(1, |_, line| {
        let mut value = valp_kernel::json::parse(&line).unwrap();
        let valp_kernel::json::Value::Object(vector) = &mut value else {
            panic!()
        };
        let expected = vector.get_mut("expected_result").unwrap();
        let valp_kernel::json::Value::Object(result) = expected else {
            panic!()
        };
        result.insert(
            "input_digest".into(),
            format!("sha256:{}", "0".repeat(64)).into(),
        );
        let bytes = valp_kernel::json::write::canonical_bytes(expected).unwrap();
        vector.insert(
            "expected_result_bytes_sha256".into(),
            valp_kernel::canonical::sha256_digest(&bytes).into(),
        );
        let text = valp_kernel::json::write::canonical_bytes(&value).unwrap();
        String::from_utf8(text).unwrap().trim_end().to_owned()
    });
    let report = run_files(&[file.path().to_owned()], &no_deviations()).unwrap();
    let message = &report.failures()[0].message;
    assert!(
        message.starts_with("first difference at byte "),
        "{message}"
    );
}

#[test]
fn malformed_lines_fail_with_their_location_and_do_not_stop_the_run() {
    let file = vector_file(3, |index, line| match index {
        0 => "{not json".to_owned(),
        1 => "[1,2]".to_owned(),
        _ => line,
    });
    let report = run_files(&[file.path().to_owned()], &no_deviations()).unwrap();
    assert_eq!(
        report.summary_line(),
        "conformance: 1 passed, 0 deviations, 2 failed"
    );
    assert!(report.failures()[0].location.ends_with(":1"));
    assert!(
        report.failures()[0]
            .message
            .starts_with("vector is not JSON: "),
        "{}",
        report.failures()[0].message
    );
    assert_eq!(report.failures()[1].message, "vector is not a JSON object");
}

#[test]
fn an_empty_file_is_an_error_not_a_pass() {
    let file = tempfile::Builder::new()
        .suffix(".jsonl")
        .tempfile()
        .unwrap();
    let error = run_files(&[file.path().to_owned()], &no_deviations()).unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("no conformance vectors found in "),
        "{error}"
    );
}

#[test]
fn cli_prints_the_table_and_summary_and_exits_zero() {
    let output = run_valp(&[
        "conformance",
        "tests/fixtures/conformance/kernel-vectors.jsonl.gz",
        "tests/fixtures/conformance/replay-vectors.jsonl.gz",
        "tests/fixtures/conformance/checkpoint-replay-vectors.jsonl.gz",
    ])
    .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(output.status.success(), "{stdout}");
    assert!(stdout.starts_with("category"), "{stdout}");
    assert!(stdout.contains("deviation D1: 3 cases (see kernel/DEVIATIONS.md)\n"));
    assert_eq!(
        stdout.lines().last(),
        Some("conformance: 3291 passed, 3 deviations, 0 failed")
    );
}

#[test]
fn cli_exits_non_zero_and_names_failures() {
    let output = run_valp(&[
        "conformance",
        "--no-deviations",
        "-q",
        "tests/fixtures/conformance/kernel-vectors.jsonl.gz",
    ])
    .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(stdout.starts_with("FAIL malformed_types/event/expected-revision-false (tests/fixtures/conformance/kernel-vectors.jsonl.gz:1882): "), "{stdout}");
    assert_eq!(
        stdout.lines().last(),
        Some("conformance: 2647 passed, 0 deviations, 3 failed")
    );
}

#[test]
fn cli_reports_a_missing_file() {
    let output = run_valp(&["conformance", "no/such/file.jsonl"]).unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("no/such/file.jsonl: No such file or directory"),
        "{stderr}"
    );
}

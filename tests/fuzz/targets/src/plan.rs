//! The plan file parser ([`valp_runtime::plan::parse`]).

use std::path::Path;

use valp_kernel::canonical::Canonical;
use valp_runtime::plan::{self, Plan};

/// The name problems must carry.
const FILE: &str = "plan.toml";

/// An accepted plan survives its canonical encoding (as published); a refused one lists its
/// problems in file order, each at a `plan.toml:line:column` inside the text.
pub fn plan_toml(data: &[u8]) {
    match plan::parse(Path::new(FILE), data) {
        Ok(plan) => {
            let bytes = plan.canonical_bytes();
            assert_eq!(
                Plan::from_canonical("fuzz", &bytes),
                Ok(plan),
                "a valid plan does not survive its canonical form"
            );
        }
        Err(errors) => {
            assert!(!errors.problems.is_empty(), "an error without a problem");
            // Positions of a file that is not UTF-8 are inside its valid prefix.
            let valid = match std::str::from_utf8(data) {
                Ok(text) => text,
                Err(error) => std::str::from_utf8(&data[..error.valid_up_to()]).unwrap_or(""),
            };
            let lines: Vec<&str> = valid.split('\n').collect();
            let mut previous = (1, 1);
            for problem in &errors.problems {
                assert_eq!(problem.file, FILE, "{problem}");
                let place = (problem.line, problem.column);
                assert!(problem.line >= 1 && problem.column >= 1, "{problem}");
                let line = lines.get(problem.line - 1).unwrap_or_else(|| {
                    panic!("line past the end ({} lines): {problem}", lines.len())
                });
                assert!(
                    problem.column <= line.chars().count() + 1,
                    "column past the end of the line: {problem}"
                );
                assert!(place >= previous, "problems out of file order: {errors}");
                previous = place;
            }
        }
    }
}

//! `strain compare`: reads the result files of both sides, hands their usable intervals to
//! [`crate::compare`], prints the text (and JSON), and turns a significant regression into
//! [`super::EXIT_REGRESSION`]. A file that is missing or is not a strain result is a usage error.

use std::io::Write;
use std::path::PathBuf;

use super::flags::CompareFlags;
use super::{CliError, EXIT_OK, EXIT_REGRESSION};
use crate::compare::{self, render, Interval};

/// Runs `strain compare`.
pub fn run(f: &CompareFlags) -> Result<i32, CliError> {
    for path in [&f.files.json, &f.files.html].into_iter().flatten() {
        super::check_writable(path)?;
    }
    let (base_files, new_files): (&[PathBuf], &[PathBuf]) = if f.new.is_empty() {
        match f.base.as_slice() {
            [base, new] => (std::slice::from_ref(base), std::slice::from_ref(new)),
            _ => {
                return Err(CliError::Usage(
                    "compare takes BASE NEW, or several files per side: BASE... -- NEW...".into(),
                ))
            }
        }
    } else {
        (&f.base, &f.new)
    };
    if !(f.fail_on_regression.is_finite() && f.fail_on_regression >= 0.0) {
        return Err(CliError::Usage(format!(
            "--fail-on-regression {}: expected a percentage >= 0",
            f.fail_on_regression
        )));
    }
    let base = side(base_files)?;
    let new = side(new_files)?;
    let c = compare::compare(&base, &new, f.fail_on_regression);
    if c.too_few() {
        eprintln!(
            "strain: warning: too few intervals to decide ({} base, {} new; {} needed on each side): \
             run longer or use a shorter --interval",
            c.base_samples,
            c.new_samples,
            compare::MIN_SAMPLES
        );
    }
    let to_stdout = f.files.json.as_deref().is_some_and(|p| p.as_os_str() == "-");
    let text = render::text(&c, base_files.len(), new_files.len());
    if to_stdout {
        eprint!("{text}");
    } else {
        print!("{text}");
    }
    if let Some(path) = &f.files.json {
        let json = render::json(&c);
        if to_stdout {
            let _ = std::io::stdout().write_all(json.as_bytes());
        } else {
            super::write_file(path, &json)?;
        }
    }
    if let Some(path) = &f.files.html {
        let mut results = Vec::with_capacity(base_files.len() + new_files.len());
        for (side, files) in [("base", base_files), ("new", new_files)] {
            for file in files {
                results.push((format!("{side} {}", super::file_name(file)), super::load_result(file)?));
            }
        }
        super::write_file(path, &crate::report::html::render(&results))?;
    }
    Ok(if c.regressed() { EXIT_REGRESSION } else { EXIT_OK })
}

/// The usable intervals of one side's files, pooled.
fn side(files: &[PathBuf]) -> Result<Vec<Interval>, CliError> {
    let mut all = Vec::new();
    for path in files {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|source| compare::CompareError::Read { path: name.clone(), source })
            .map_err(usage)?;
        let rows = compare::parse_result(&name, &text).map_err(usage)?;
        let kept = compare::usable(&rows);
        if kept.is_empty() {
            return Err(usage(compare::CompareError::NoIntervals { path: name }));
        }
        all.extend(kept);
    }
    Ok(all)
}

fn usage(e: compare::CompareError) -> CliError {
    CliError::Usage(e.to_string())
}

//! `strain report`: saved results (runs, a comparison, a search) drawn as one HTML page; each
//! file is read once and its kind picks the page.

use super::flags::ReportFlags;
use super::{check_writable, write_file, CliError, EXIT_OK};
use crate::report;
use crate::result;

/// `strain report`: saved results drawn as one page.
pub fn run(f: &ReportFlags) -> Result<i32, CliError> {
    if f.labels.len() > f.results.len() {
        return Err(CliError::Usage(format!("{} labels for {} results", f.labels.len(), f.results.len())));
    }
    check_writable(&f.output)?;
    // Each file is read once; its kind picks the page. A search's and a comparison's pages have
    // their own layouts, so each is given alone.
    let mut docs = Vec::with_capacity(f.results.len());
    for path in &f.results {
        let text = read_text(path)?;
        let kind = parsed(path, &text, result::kind_of)?;
        docs.push((path, text, kind));
    }
    let page = match docs.as_slice() {
        [(path, text, result::Kind::FindMax)] => {
            report::html::render_find_max(&parsed(path, text, result::find_max::FindMaxDoc::parse)?)
        }
        [(path, text, result::Kind::Compare)] => {
            let doc = parsed(path, text, crate::compare::doc::CompareDoc::parse)?;
            crate::compare::render::html(&doc.comparison, &doc.labelled())
        }
        docs => {
            let mut results = Vec::with_capacity(docs.len());
            for (i, (path, text, kind)) in docs.iter().enumerate() {
                let what = match kind {
                    result::Kind::Run => None,
                    result::Kind::FindMax => Some("a find-max search"),
                    result::Kind::Compare => Some("a comparison"),
                };
                if let Some(what) = what {
                    return Err(CliError::Usage(format!(
                        "{what} gets a page of its own: give its JSON alone ({} files given)",
                        docs.len()
                    )));
                }
                let label = f.labels.get(i).cloned().unwrap_or_else(|| file_name(path));
                results.push((label, parsed(path, text, result::RunDoc::parse)?));
            }
            report::html::render(&results)
        }
    };
    write_file(&f.output, &page)?;
    Ok(EXIT_OK)
}

/// A path's file name, for labels.
pub(crate) fn file_name(path: &std::path::Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// A file's text; an unreadable file is one line naming it.
pub(crate) fn read_text(path: &std::path::Path) -> Result<String, CliError> {
    std::fs::read_to_string(path)
        .map_err(|source| CliError::Io { what: format!("cannot read {}", path.display()), source })
}

/// `text` (the file `path`) read with `parse`; an unfit document is one line naming the file.
fn parsed<T>(
    path: &std::path::Path,
    text: &str,
    parse: impl Fn(&str) -> Result<T, result::ResultError>,
) -> Result<T, CliError> {
    parse(text).map_err(|e| CliError::Usage(format!("{}: {e}", path.display())))
}

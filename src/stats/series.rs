//! The measured interval rows of a run as they come, kept so that a long run's memory stays
//! flat: rows are compressed in batches and written to an unlinked temporary file, and read
//! back once the load is over.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, ErrorKind, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::codec::Deflater;
use super::interval::IntervalRow;

/// Rows held with their plain V2 histograms before a batch is compressed and written out.
/// Above the 40 rows (and a late cut or two) a run without `--interval` is cut into, so such a
/// run never compresses while its load goes on (compressing takes CPU from the workers, much of
/// it in a debug build: a replay and an A/B test fell behind on a 2-CPU machine with 32), and a
/// soak's 1 s rows still reach their steady memory inside the first minute.
const BATCH: usize = 48;

/// The run's interval rows in order, each with its whole latency histogram.
#[derive(Debug)]
pub struct Series {
    /// The current batch's rows and their histograms in plain V2.
    batch: Vec<(IntervalRow, Vec<u8>)>,
    /// Where the temporary file is made.
    dir: PathBuf,
    /// Whether making the file was tried (at the first full batch, so short runs make none).
    tried: bool,
    /// The unlinked temporary file (`O_TMPFILE`) of JSON lines, vanishing with the process, and
    /// the length of its whole lines.
    file: Option<(File, u64)>,
    /// Rows compressed but not in the file, after the file's: every row when the file could not
    /// be made (no temporary directory, a filesystem without `O_TMPFILE`), the rows since a
    /// write failed (a full disk). Once it holds any, later batches join it, to keep the order.
    memory: Vec<IntervalRow>,
    /// One batch's JSON lines, reused.
    text: Vec<u8>,
    /// The compressor, made at the first full batch and kept (see [`Deflater`]).
    deflater: Option<Deflater>,
}

/// A row kept in the temporary file could not be read back.
#[derive(Debug, thiserror::Error)]
#[error("the interval series kept in a temporary file could not be read back: {0}")]
pub struct SeriesError(#[from] std::io::Error);

impl Series {
    /// An empty series whose full batches go to a temporary file in `dir`.
    pub fn new(dir: &Path) -> Self {
        Self {
            batch: Vec::with_capacity(BATCH),
            dir: dir.to_path_buf(),
            tried: false,
            file: None,
            memory: Vec::new(),
            text: Vec::new(),
            deflater: None,
        }
    }

    /// Adds the next row, its latency histogram in plain V2.
    pub fn push(&mut self, row: IntervalRow, v2: Vec<u8>) {
        self.batch.push((row, v2));
        if self.batch.len() == BATCH {
            self.settle();
        }
    }

    /// Whether full batches are going to the temporary file.
    pub fn spilling(&self) -> bool {
        self.file.is_some() && self.memory.is_empty()
    }

    /// Compresses the batch's histograms into their rows and writes the rows out.
    fn settle(&mut self) {
        if !self.tried {
            self.tried = true;
            self.file = open_unlinked(&self.dir).ok().map(|f| (f, 0));
        }
        let rows = compressed(&mut self.batch, self.deflater.get_or_insert_with(Deflater::new));
        if let Some((file, len)) = self.file.as_mut().filter(|_| self.memory.is_empty()) {
            self.text.clear();
            for row in &rows {
                // A row of numbers and strings always serializes.
                let _ = serde_json::to_writer(&mut self.text, row);
                self.text.push(b'\n');
            }
            if file.write_all(&self.text).is_ok() {
                *len += self.text.len() as u64;
                return;
            }
            // A part-written batch is cut off; it and the rows after it stay in memory.
            let _ = file.set_len(*len);
        }
        self.memory.extend(rows);
    }

    /// The rows in order, with their histograms compressed.
    pub fn finish(mut self) -> Result<Vec<IntervalRow>, SeriesError> {
        let last = compressed(&mut self.batch, self.deflater.get_or_insert_with(Deflater::new));
        let Some((mut file, len)) = self.file else {
            self.memory.extend(last);
            return Ok(self.memory);
        };
        file.seek(SeekFrom::Start(0))?;
        let mut rows = Vec::new();
        for line in BufReader::new(file.take(len)).lines() {
            let row = serde_json::from_str(&line?).map_err(|e| std::io::Error::new(ErrorKind::InvalidData, e))?;
            rows.push(row);
        }
        rows.extend(self.memory);
        rows.extend(last);
        Ok(rows)
    }
}

/// The batch's rows with their histograms compressed into them; the batch is left empty.
fn compressed(batch: &mut Vec<(IntervalRow, Vec<u8>)>, z: &mut Deflater) -> Vec<IntervalRow> {
    batch
        .drain(..)
        .map(|(mut row, v2)| {
            row.latency_histogram = Some(z.deflate_v2(&v2));
            row
        })
        .collect()
}

/// A new file in `dir` with no name, read and written by this process only.
fn open_unlinked(dir: &Path) -> std::io::Result<File> {
    OpenOptions::new().read(true).write(true).custom_flags(libc::O_TMPFILE).mode(0o600).open(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::codec::deflate_v2;

    /// `n` rows, each with a histogram of its own values.
    fn rows(n: u64) -> Vec<(IntervalRow, Vec<u8>)> {
        let mut v2 = hdrhistogram::serialization::V2Serializer::new();
        (0..n)
            .map(|i| {
                let mut h = crate::stats::latency_histogram();
                h.record(100 + i).unwrap();
                let row = IntervalRow { start_s: i as f64 * 0.1, requests: i, ..IntervalRow::default() };
                (row, crate::stats::codec::v2(&h, &mut v2))
            })
            .collect()
    }

    fn expected(rows: &[(IntervalRow, Vec<u8>)]) -> Vec<IntervalRow> {
        rows.iter().map(|(r, v2)| IntervalRow { latency_histogram: Some(deflate_v2(v2)), ..r.clone() }).collect()
    }

    #[test]
    fn rows_past_a_batch_go_to_an_unlinked_file_and_come_back_whole_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let all = rows(BATCH as u64 * 3 + 5);
        let mut series = Series::new(dir.path());
        for (i, (row, v2)) in all.iter().cloned().enumerate() {
            series.push(row, v2);
            // No file for a run shorter than a batch; none with a name at any time.
            assert_eq!(series.spilling(), i + 1 >= BATCH, "row {i}");
            assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        }
        assert!(series.memory.is_empty() && series.batch.len() == 5);
        let back = series.finish().unwrap();
        assert_eq!(back, expected(&all));
        let h = crate::stats::codec::decode_histogram(back[40].latency_histogram.as_ref().unwrap()).unwrap();
        assert_eq!((h.len(), h.max()), (1, 140));
    }

    #[test]
    fn without_a_temporary_directory_the_rows_stay_in_memory() {
        let all = rows(BATCH as u64 * 2 + 1);
        let mut series = Series::new(Path::new("/nonexistent/strain-series"));
        for (row, v2) in all.iter().cloned() {
            series.push(row, v2);
        }
        assert!(!series.spilling());
        assert_eq!(series.memory.len(), BATCH * 2);
        assert_eq!(series.finish().unwrap(), expected(&all));
    }

    #[test]
    fn a_short_series_is_compressed_at_the_end() {
        let all = rows(3);
        let mut series = Series::new(Path::new("/nonexistent/strain-series"));
        for (row, v2) in all.iter().cloned() {
            series.push(row, v2);
        }
        assert!(!series.tried);
        assert_eq!(series.finish().unwrap(), expected(&all));
    }
}

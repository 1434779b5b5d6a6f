//! Reading a file a user names, bounded: it must be a regular file (not `/dev/zero`, a FIFO
//! or a folder) no larger than the limit of its kind, checked on the open file before a byte
//! is read, and never more than the limit read even if it grows meanwhile. Each kind of input
//! has its documented limit here.

use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use bytesize::{ByteSize, MIB};

/// A scenario file, or the `invariants.toml` beside one: the largest shipped scenario is
/// about 10 KB, so 4 MiB is room for any hand-written or generated one.
pub const SCENARIO_LIMIT: u64 = 4 * MIB;

/// A session transcript for `import` (each file: the session's, each subagent's). Long real
/// sessions reach tens of megabytes (the import benchmark reads 10.6 MB); importing one peaks
/// at about five times its size in memory (measured: 55 MB for 10.6 MB, 226 MB for 53 MB), so
/// 128 MiB keeps a session twelve times the benchmark's importable within about 650 MB.
pub const TRANSCRIPT_LIMIT: u64 = 128 * MIB;

/// A JSON file of results given as input (`--baseline`, `history --append`, a shard's
/// `matrix.json`): a matrix of every published version is a few megabytes.
pub const RESULTS_LIMIT: u64 = 64 * MIB;

/// A small side file read with its main one (a subagent transcript's `.meta.json`).
pub const SIDE_FILE_LIMIT: u64 = MIB;

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("not a regular file ({0}): give a file")]
    NotAFile(&'static str),
    #[error("{size} bytes is over the {} limit of {what}", ByteSize(*limit).display().iec())]
    TooLarge {
        size: u64,
        limit: u64,
        what: &'static str,
    },
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// The whole file at `path`, if it is a regular file of at most `limit` bytes; `what` names
/// the kind in the error ("a scenario file").
pub fn read_bounded(path: &Path, limit: u64, what: &'static str) -> Result<Vec<u8>, ReadError> {
    // Non-blocking, so a FIFO in the file's place cannot hang the open; checked on the open
    // file, so nothing can swap the file between the check and the read.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    let kind = meta.file_type();
    if !kind.is_file() {
        return Err(ReadError::NotAFile(describe(kind)));
    }
    let too_large = |size| ReadError::TooLarge { size, limit, what };
    if meta.len() > limit {
        return Err(too_large(meta.len()));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// [`read_bounded`] as UTF-8 text.
pub fn read_text_bounded(path: &Path, limit: u64, what: &'static str) -> Result<String, ReadError> {
    let bytes = read_bounded(path, limit, what)?;
    String::from_utf8(bytes).map_err(|e| {
        ReadError::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "not UTF-8 text (an invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        ))
    })
}

/// What kind of file system entry `kind` is, in words (`a folder`, `a FIFO`).
pub fn describe(kind: std::fs::FileType) -> &'static str {
    if kind.is_dir() {
        "a folder"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a plain file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_within_its_limit_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.toml");
        std::fs::write(&path, "name = 1\n").unwrap();
        assert_eq!(read_bounded(&path, 9, "x").unwrap(), b"name = 1\n");
        assert_eq!(read_text_bounded(&path, 9, "x").unwrap(), "name = 1\n");
    }

    #[test]
    fn a_file_over_its_limit_is_refused_with_both_sizes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.toml");
        std::fs::write(&path, vec![b'#'; 10]).unwrap();
        let e = read_bounded(&path, 9, "a scenario file").unwrap_err();
        assert_eq!(
            e.to_string(),
            "10 bytes is over the 9 B limit of a scenario file"
        );
        let big = ReadError::TooLarge {
            size: 50 * MIB,
            limit: SCENARIO_LIMIT,
            what: "a scenario file",
        };
        assert_eq!(
            big.to_string(),
            "52428800 bytes is over the 4.0 MiB limit of a scenario file"
        );
        // Measured before reading: a sparse file says its whole size, not the bytes read.
        let sparse = dir.path().join("sparse.toml");
        std::fs::File::create(&sparse)
            .unwrap()
            .set_len(50 * MIB)
            .unwrap();
        let e = read_bounded(&sparse, SCENARIO_LIMIT, "a scenario file").unwrap_err();
        assert!(e.to_string().starts_with("52428800 bytes"), "{e}");
    }

    #[test]
    fn devices_fifos_and_folders_are_refused_before_a_byte_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
            0,
        )
        .unwrap();
        for (path, kind) in [
            (Path::new("/dev/zero"), "a character device"),
            (fifo.as_path(), "a FIFO"),
            (dir.path(), "a folder"),
        ] {
            let e = read_bounded(path, SCENARIO_LIMIT, "a scenario file").unwrap_err();
            assert_eq!(
                e.to_string(),
                format!("not a regular file ({kind}): give a file")
            );
        }
    }

    #[test]
    fn bytes_that_are_not_text_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bin");
        std::fs::write(&path, b"ab\xff").unwrap();
        let e = read_text_bounded(&path, 10, "x").unwrap_err();
        assert!(e.to_string().contains("offset 2"), "{e}");
    }
}

//! Atomic writes: a file is written under a temporary name of its own beside where it goes and
//! renamed into place when complete, so that readers never see half a file and two writers never
//! share a temporary file (each has a unique name).

use std::io;
use std::path::Path;

use tempfile::NamedTempFile;

/// A temporary file beside `path` (in its folder), readable as a file made with
/// `File::create` would be (mode 0666 less the umask, not tempfile's 0600). Write it, then
/// `persist(path)`; dropped unpersisted, it is removed.
pub fn temp_file_beside(path: &Path) -> io::Result<NamedTempFile> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let prefix = format!(".{name}.");
    let mut b = tempfile::Builder::new();
    b.prefix(&prefix).suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        b.permissions(std::fs::Permissions::from_mode(0o666));
    }
    b.tempfile_in(dir)
}

/// Writes `bytes` to `path` atomically.
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut tmp = temp_file_beside(path)?;
    io::Write::write_all(&mut tmp, bytes)?;
    tmp.persist(path).map(drop).map_err(|e| e.error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_replaces_the_file_whole_and_leaves_nothing_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.json");
        write(&p, b"first").unwrap();
        write(&p, b"second").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"second");
        let names: Vec<_> =
            std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("out.json")]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
            assert_ne!(mode & 0o044, 0, "readable by others as File::create makes it: {mode:o}");
        }
    }
}

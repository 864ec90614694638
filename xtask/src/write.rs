//! The only way xtask writes a file: to a temporary file in the target's directory,
//! then renamed over the target, so an interrupted write leaves the old file intact.

use std::io::Write;
use std::path::Path;

use crate::error::XtaskError;

/// Writes `bytes` to `root/rel` atomically, creating parent directories.
pub fn atomic(root: &Path, rel: &str, bytes: &[u8]) -> Result<(), XtaskError> {
    let target = root.join(rel);
    let dir = target.parent().unwrap_or(root);
    std::fs::create_dir_all(dir).map_err(|e| XtaskError::io(rel, e))?;
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = dir.join(format!(".{name}.xtask-{}.tmp", std::process::id()));
    let result = std::fs::File::create(&temp)
        .and_then(|mut f| {
            f.write_all(bytes)?;
            f.sync_all()
        })
        .and_then(|()| std::fs::rename(&temp, &target));
    if let Err(e) = result {
        // The temporary file is ours; the target is untouched.
        let _ = std::fs::remove_file(&temp);
        return Err(XtaskError::io(rel, e));
    }
    Ok(())
}

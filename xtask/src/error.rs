//! Errors that stop a command before or instead of a verdict; every one of them exits 2.

use std::fmt;

/// A usage, configuration or environment error. Diagnostics are not
/// errors: they are the verdict of a gate that ran.
#[derive(Debug)]
pub enum XtaskError {
    /// The command line is wrong.
    Usage(String),
    /// A configuration file (a manifest, the roles table) is malformed.
    Config {
        /// Root-relative path of the file.
        path: String,
        /// What is wrong, naming the key.
        message: String,
    },
    /// A file could not be read or written.
    Io {
        /// Root-relative (or given) path.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// `cargo` could not be started or failed.
    Cargo {
        /// Its exit status, when it ran.
        status: Option<i32>,
        /// What it printed on stderr, or why it could not start.
        stderr: String,
    },
}

impl fmt::Display for XtaskError {
    /// Renders the part after `error: `, as `[<path>: ]<message>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            XtaskError::Usage(msg) => f.write_str(msg.trim_end()),
            XtaskError::Config { path, message } => write!(f, "{path}: {message}"),
            XtaskError::Io { path, source } => write!(f, "{path}: {source}"),
            XtaskError::Cargo { status, stderr } => {
                match status {
                    Some(code) => write!(f, "cargo exited with status {code}")?,
                    None => f.write_str("cargo could not run")?,
                }
                let stderr = stderr.trim_end();
                if !stderr.is_empty() {
                    write!(f, ":\n{stderr}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for XtaskError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            XtaskError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl XtaskError {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<String>, source: std::io::Error) -> XtaskError {
        XtaskError::Io {
            path: path.into(),
            source,
        }
    }

    /// A configuration error in `path`.
    pub fn config(path: impl Into<String>, message: impl Into<String>) -> XtaskError {
        XtaskError::Config {
            path: path.into(),
            message: message.into(),
        }
    }
}

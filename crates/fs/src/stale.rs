//! The stale-write rule, shared by every provider: a write replaces only the version its
//! writer saw, and creates only what does not exist.

use std::path::Path;

use crate::error::FsError;
use crate::version::Version;

/// Whether a write expecting `expected` may replace a file whose version is now `current`
/// (`None`: there is no file). Every [`crate::FileAccess`] checks this before it writes.
pub fn check_expected(
    path: &Path,
    current: Option<&Version>,
    expected: Option<&Version>,
) -> Result<(), FsError> {
    let what = match (current, expected) {
        (None, None) => return Ok(()),
        (Some(now), Some(seen)) if now == seen => return Ok(()),
        (Some(_), None) => "exists already: read it before overwriting it",
        (Some(_), Some(_)) => "changed since it was read: read it again",
        (None, Some(_)) => "no longer exists: it was removed since it was read",
    };
    Err(FsError::Stale {
        path: path.into(),
        what: what.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_replaces_only_what_its_writer_saw() {
        let (a, b) = (Version::of("a"), Version::of("b"));
        let path = Path::new("/p/f");
        // (now, expected, refused with)
        let cases = [
            (None, None, None),
            (Some(&a), Some(&a), None),
            (Some(&a), Some(&b), Some("changed since it was read")),
            (Some(&a), None, Some("exists already")),
            (None, Some(&a), Some("no longer exists")),
        ];
        for (now, expected, refused) in cases {
            match (check_expected(path, now, expected), refused) {
                (Ok(()), None) => {}
                (Err(err), Some(what)) => {
                    assert_eq!(err.code(), "stale");
                    assert!(err.to_string().contains(what), "{err}");
                }
                (got, want) => panic!("{now:?} {expected:?}: got {got:?}, want {want:?}"),
            }
        }
    }
}

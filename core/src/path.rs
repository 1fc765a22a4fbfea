//! ZooKeeper path rules (PathUtils.validatePath) and path helpers.

use crate::{Error, Result};

/// Longest path we accept, in bytes. ZooKeeper's own bound is the request size (jute.maxbuffer);
/// a path this long is a bug in the caller, so we say so up front.
pub const MAX_PATH_LEN: usize = 4096;

/// Largest node data we send. ZooKeeper rejects requests above jute.maxbuffer (1 MiB by default)
/// by dropping the connection, which would look like a connection loss; we keep 1 KiB for the
/// request header and path and refuse larger data with a clear error instead.
pub const MAX_DATA_LEN: usize = 1024 * 1024 - 1024;

/// Validates an absolute ZooKeeper path with ZooKeeper's rules.
pub fn validate_path(path: &str) -> Result<()> {
    validate(path, false)
}

/// Validates a path used as a prefix for a sequential node (a trailing `/` is allowed there).
pub(crate) fn validate_sequential_path(path: &str) -> Result<()> {
    validate(path, true)
}

fn validate(path: &str, allow_trailing_slash: bool) -> Result<()> {
    let bad = |why: &str| Err(Error::invalid(format!("invalid path {path:?}: {why}")));
    if path.is_empty() {
        return bad("a path must not be empty");
    }
    if !path.starts_with('/') {
        return bad("a path must be absolute (start with '/')");
    }
    if path.len() > MAX_PATH_LEN {
        return Err(Error::invalid(format!(
            "invalid path ({} bytes): longer than the {MAX_PATH_LEN}-byte limit",
            path.len()
        )));
    }
    if path.len() == 1 {
        return Ok(());
    }
    if path.ends_with('/') && !allow_trailing_slash {
        return bad("a path must not end with '/'");
    }
    let body = if allow_trailing_slash {
        path.trim_end_matches('/')
    } else {
        path
    };
    for segment in body[1..].split('/') {
        match segment {
            "" => return bad("empty node name ('//')"),
            "." | ".." => return bad("relative segments '.' and '..' are not allowed"),
            _ => {}
        }
    }
    // Most paths are ASCII: one pass over the bytes (the controls and DEL are the only
    // forbidden ASCII code points); any other byte decodes the whole path.
    if path.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return Ok(());
    }
    if let Some(c) = path.chars().find(|&c| forbidden(c)) {
        return bad(&format!(
            "character U+{:04X} is not allowed in a ZooKeeper path",
            c as u32
        ));
    }
    Ok(())
}

/// ZooKeeper's forbidden code points. Java strings are UTF-16, so every code point above U+FFFF
/// arrives there as a surrogate pair, which ZooKeeper forbids.
fn forbidden(c: char) -> bool {
    matches!(c as u32, 0x0000..=0x001f | 0x007f..=0x009f | 0xd800..=0xf8ff | 0xfff0..=0xffff | 0x10000..)
}

/// Validates node data size.
pub(crate) fn validate_data(path: &str, data: &[u8]) -> Result<()> {
    if data.len() > MAX_DATA_LEN {
        return Err(Error::invalid(format!(
            "data for {path} is {} bytes; the limit is {MAX_DATA_LEN} bytes (ZooKeeper's 1 MiB jute.maxbuffer less room for the request)",
            data.len()
        )));
    }
    Ok(())
}

/// `parent + "/" + child`, without doubling the slash under the root.
pub fn join(parent: &str, child: &str) -> String {
    join_parts(parent, &[child])
}

/// [`join`] of a child given in pieces (a protected node's `_c_<uuid>-` prefix and its name),
/// in one allocation.
pub(crate) fn join_parts(parent: &str, child: &[&str]) -> String {
    let sep = if parent == "/" { "" } else { "/" };
    let len = parent.len() + sep.len() + child.iter().map(|p| p.len()).sum::<usize>();
    let mut path = String::with_capacity(len);
    path.push_str(parent);
    path.push_str(sep);
    child.iter().for_each(|p| path.push_str(p));
    path
}

/// The parent of an absolute path (`/` for a top-level node).
pub fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// The last segment of a path.
pub fn node_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_good_paths() {
        for p in [
            "/",
            "/a",
            "/a/b",
            "/zookeeper",
            "/a.b",
            "/a..b",
            "/日本",
            "/a b",
            "/ ~!",
            "/é\u{a0}",
            "/_c_x-lock-0000000001",
        ] {
            validate_path(p).unwrap_or_else(|e| panic!("{p}: {e}"));
        }
    }

    #[test]
    fn rejects_bad_paths_with_a_reason() {
        let long = format!("/{}", "x".repeat(MAX_PATH_LEN));
        let cases: &[(&str, &str)] = &[
            ("", "empty"),
            ("a/b", "absolute"),
            ("/a/", "end with"),
            ("/a//b", "empty node"),
            ("/a/./b", "relative"),
            ("/a/..", "relative"),
            ("/a\0b", "U+0000"),
            ("/a\u{1}", "U+0001"),
            ("/a\u{1f}b", "U+001F"),
            ("/a\u{7f}", "U+007F"),
            ("/é\u{9f}", "U+009F"),
            ("/a\u{e000}", "U+E000"),
            ("/a\u{fff5}", "U+FFF5"),
            ("/😀", "U+1F600"),
            (&long, "limit"),
        ];
        for (p, why) in cases {
            let e = validate_path(p).unwrap_err();
            assert!(matches!(e, Error::InvalidArgument(_)), "{p:?}");
            assert!(e.to_string().contains(why), "{p:?}: {e}");
        }
    }

    #[test]
    fn helpers() {
        assert_eq!(join("/", "a"), "/a");
        assert_eq!(join("/a", "b"), "/a/b");
        assert_eq!(join_parts("/", &["_c_x-", "lock-"]), "/_c_x-lock-");
        assert_eq!(join_parts("/a/b", &["_c_x-", "lock-"]), "/a/b/_c_x-lock-");
        assert_eq!(parent("/a"), "/");
        assert_eq!(parent("/a/b"), "/a");
        assert_eq!(node_name("/a/b"), "b");
        assert!(validate_sequential_path("/a/").is_ok());
    }
}

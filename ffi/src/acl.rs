//! ACL administration: a node's ACL read and replaced (Curator's getACL()/setACL()), and a
//! create with a node's own ACL instead of the client's provider's.

use std::ffi::{c_char, CString};

use zkrecipes::{Acl, CreateOptions, Error};

use crate::boundary::{arg_out_opt, arg_slice, arg_str, handle_call, handle_out, wait};
use crate::client::{
    flags_arg, put_stat, version_arg, zkr_client, zkr_create_mode, CREATE_MODES,
    ZKR_CREATE_PARENTS, ZKR_CREATE_PROTECTED,
};
use crate::options::{acl_list, zkr_acl};
use crate::status::zkr_status;
use crate::types::{c_string, free_returned, give_array, take_array, zkr_stat};

/// An ACL returned by this library (zkr_client_get_acl): `len` entries whose strings belong to
/// the list. Read it, then free it with zkr_acl_list_free; never free its parts yourself.
#[repr(C)]
pub struct zkr_acl_list {
    /// `len` entries (NULL when `len` is 0).
    pub entries: *mut zkr_acl,
    /// How many entries `entries` holds.
    pub len: usize,
}

impl zkr_acl_list {
    /// The list for C, or an error (a NUL byte in a scheme or id) with nothing left allocated.
    fn from_acl(acl: Vec<Acl>) -> zkrecipes::Result<*mut zkr_acl_list> {
        let owned = |s: String| {
            CString::new(s).map_err(|e| {
                Error::Internal(format!("an ACL string contains a NUL byte: {e}").into())
            })
        };
        // Every string is made (and owned by Rust) before any is given out, so an error drops
        // them all.
        let strings = acl
            .into_iter()
            .map(|a| Ok((a.perms.bits(), owned(a.scheme)?, owned(a.id)?)))
            .collect::<zkrecipes::Result<Vec<_>>>()?;
        let entries = strings
            .into_iter()
            .map(|(perms, scheme, id)| zkr_acl {
                perms,
                scheme: scheme.into_raw(),
                id: id.into_raw(),
            })
            .collect();
        let (entries, len) = give_array(entries);
        Ok(Box::into_raw(Box::new(zkr_acl_list { entries, len })))
    }
}

/// Frees an ACL list and its strings. NULL does nothing.
#[no_mangle]
pub extern "C" fn zkr_acl_list_free(list: *mut zkr_acl_list) {
    free_returned("zkr_acl_list_free", list, |l| {
        // SAFETY: the entries of a list `from_acl` made with `give_array`, taken back once with
        // the list; their strings were made by `CString::into_raw`.
        unsafe {
            for e in take_array(l.entries, l.len) {
                drop(CString::from_raw(e.scheme.cast_mut()));
                drop(CString::from_raw(e.id.cast_mut()));
            }
        }
    })
}

/// A node's ACL in `*acl` (free with zkr_acl_list_free) and, if `stat` is not NULL, its stat
/// (`aversion` is the ACL's version). Reading an ACL needs READ or ADMIN permission
/// (ZKR_NO_AUTH otherwise); ZKR_NO_NODE if there is no node.
#[no_mangle]
pub extern "C" fn zkr_client_get_acl(
    c: *mut zkr_client,
    path: *const c_char,
    acl: *mut *mut zkr_acl_list,
    stat: *mut zkr_stat,
) -> zkr_status {
    handle_out("zkr_client_get_acl", c, acl, "acl", |c| {
        let (list, s) = wait(c.client.get_acl(arg_str(path, "path")?))?;
        // The list first: it can still fail, and a failed call leaves `*stat` alone.
        let list = zkr_acl_list::from_acl(list)?;
        put_stat(stat, Some(&s));
        Ok(list)
    })
}

/// Replaces a node's ACL with `acl_len` entries of `acl`; `version` -1 for any ACL version, else
/// the expected `aversion` (ZKR_BAD_VERSION if it differs). If `stat` is not NULL it receives the
/// new stat. Needs ADMIN permission (ZKR_NO_AUTH otherwise).
#[no_mangle]
pub extern "C" fn zkr_client_set_acl(
    c: *mut zkr_client,
    path: *const c_char,
    acl: *const zkr_acl,
    acl_len: usize,
    version: i32,
    stat: *mut zkr_stat,
) -> zkr_status {
    handle_call("zkr_client_set_acl", c, |c| {
        let path = arg_str(path, "path")?;
        let acl = acl_list(acl, acl_len, "acl")?;
        let s = wait(c.client.set_acl(path, &acl, version_arg(version)?))?;
        put_stat(stat, Some(&s));
        Ok(())
    })
}

/// zkr_client_create with the node's own ACL (`acl_len` entries of `acl`) instead of the
/// client's (`opts.acl` / `opts.acl_rules`); parents made on the way keep the client's
/// (Curator's withACL).
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn zkr_client_create_with_acl(
    c: *mut zkr_client,
    path: *const c_char,
    data: *const u8,
    data_len: usize,
    mode: zkr_create_mode,
    flags: u32,
    acl: *const zkr_acl,
    acl_len: usize,
    created_path: *mut *mut c_char,
) -> zkr_status {
    handle_call("zkr_client_create_with_acl", c, |c| {
        let path = arg_str(path, "path")?;
        let data = arg_slice(data, data_len, "data")?;
        let acl = acl_list(acl, acl_len, "acl")?;
        let flag = flags_arg(flags, ZKR_CREATE_PARENTS | ZKR_CREATE_PROTECTED)?;
        let mut options = CreateOptions::new(CREATE_MODES.parse(mode, "mode")?);
        options.create_parents = flag(ZKR_CREATE_PARENTS);
        options.protected = flag(ZKR_CREATE_PROTECTED);
        let out = arg_out_opt(created_path);
        let created = wait(c.client.create_with_acl(path, data, options, &acl))?;
        if let Some(out) = out {
            out.write(c_string(&created.path)?);
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use zkrecipes::Permission;

    use super::*;

    #[test]
    fn an_acl_string_with_a_nul_fails_whole() {
        let acl = vec![
            Acl::new(Permission::ALL, "world", "anyone"),
            Acl::new(Permission::READ, "digest", "a\0b:x"),
        ];
        let e = zkr_acl_list::from_acl(acl).unwrap_err();
        assert!(
            matches!(e, Error::Internal(ref m) if m.contains("NUL byte")),
            "{e}"
        );
        let list = zkr_acl_list::from_acl(Acl::open()).unwrap();
        zkr_acl_list_free(list);
    }
}

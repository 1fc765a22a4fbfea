//! Dynamic ensembles: the ensemble's configuration (`/zookeeper/config`), ZooKeeper's
//! `reconfig`, and the connect string the ensemble tracker (`opts.track_ensemble`) follows.

use std::ffi::c_char;

use zkrecipes::{EnsembleConfig, EnsembleMember, Error, Reconfig, Result, ServerRole};

use crate::boundary::{arg_out_opt, arg_slice, arg_str, handle_call, handle_out, wait};
use crate::client::zkr_client;
use crate::status::zkr_status;
use crate::types::{c_string, free_returned, give_array, take_array, zkr_string_free};

/// A member's role (zkr_ensemble_member.role).
pub type zkr_server_role = u32;
/// A voting member.
pub const ZKR_SERVER_PARTICIPANT: zkr_server_role = 0;
/// A non-voting member that serves clients.
pub const ZKR_SERVER_OBSERVER: zkr_server_role = 1;

/// One member of the ensemble, from its `server.ID=` line of `/zookeeper/config`. Part of a
/// zkr_ensemble_config: never free it on its own.
#[repr(C)]
pub struct zkr_ensemble_member {
    /// The member's id (its `myid`).
    pub id: u64,
    /// The host of its (first) quorum address.
    pub host: *mut c_char,
    /// Its quorum (follower-to-leader) port.
    pub quorum_port: u16,
    /// Its leader-election port.
    pub election_port: u16,
    /// ZKR_SERVER_PARTICIPANT or ZKR_SERVER_OBSERVER.
    pub role: zkr_server_role,
    /// The address it serves clients on as written ("0.0.0.0" when only a port is given);
    /// NULL when the line has no client port.
    pub client_host: *mut c_char,
    /// Its plaintext client port; 0 when the line has none.
    pub client_port: u16,
    /// Where a client reaches it ("host:port", "[v6]:port"; its quorum host when the client
    /// address is a wildcard); NULL without a client port.
    pub client_address: *mut c_char,
    /// Its whole line, "server.ID=HOST:QUORUM:ELECTION:ROLE;HOST:PORT": what zkr_client_reconfig
    /// takes to add it (`joining`, `new_members`).
    pub server_line: *mut c_char,
}

/// The ensemble's configuration: its members by id, and its version. Free with
/// zkr_ensemble_config_free.
#[repr(C)]
pub struct zkr_ensemble_config {
    /// `len` members, by id (NULL when `len` is 0).
    pub members: *mut zkr_ensemble_member,
    /// How many members `members` holds.
    pub len: usize,
    /// The configuration's version: the zxid of the reconfiguration that made it (0 for one
    /// never changed). zkr_client_reconfig's `from_version` takes it.
    pub version: i64,
    /// The members' client addresses as a connect string ("host:port,...", no chroot; "" if
    /// none has a client port): what the ensemble tracker gives the session.
    pub connect_string: *mut c_char,
    /// The node's text as read.
    pub data: *mut c_char,
}

fn free_member(m: zkr_ensemble_member) {
    for s in [m.host, m.client_host, m.client_address, m.server_line] {
        zkr_string_free(s);
    }
}

fn opt_string(s: Option<&str>) -> Result<*mut c_char> {
    s.map_or(Ok(std::ptr::null_mut()), c_string)
}

fn member(m: &EnsembleMember) -> Result<zkr_ensemble_member> {
    let mut out = zkr_ensemble_member {
        id: m.id,
        host: std::ptr::null_mut(),
        quorum_port: m.quorum_port,
        election_port: m.election_port,
        role: match m.role {
            ServerRole::Observer => ZKR_SERVER_OBSERVER,
            _ => ZKR_SERVER_PARTICIPANT,
        },
        client_host: std::ptr::null_mut(),
        client_port: m.client_port.unwrap_or(0),
        client_address: std::ptr::null_mut(),
        server_line: std::ptr::null_mut(),
    };
    // Filled one by one so that a failure frees what was made.
    let filled = (|| {
        out.host = c_string(&m.host)?;
        out.client_host = opt_string(m.client_host.as_deref())?;
        out.client_address = opt_string(m.client_address().as_deref())?;
        out.server_line = c_string(&m.server_line())?;
        Ok(())
    })();
    match filled {
        Ok(()) => Ok(out),
        Err(e) => {
            free_member(out);
            Err(e)
        }
    }
}

fn config_box(config: &EnsembleConfig) -> Result<*mut zkr_ensemble_config> {
    let mut members = Vec::with_capacity(config.members.len());
    let made = (|| {
        for m in &config.members {
            members.push(member(m)?);
        }
        Ok((c_string(&config.connect_string())?, c_string(&config.data)))
    })();
    let (connect_string, data) = match made {
        Ok((cs, Ok(data))) => (cs, data),
        Ok((cs, Err(e))) => {
            zkr_string_free(cs);
            members.into_iter().for_each(free_member);
            return Err(e);
        }
        Err(e) => {
            members.into_iter().for_each(free_member);
            return Err(e);
        }
    };
    let (members, len) = give_array(members);
    Ok(Box::into_raw(Box::new(zkr_ensemble_config {
        members,
        len,
        version: config.version,
        connect_string,
        data,
    })))
}

/// Frees an ensemble configuration and everything in it. NULL does nothing.
#[no_mangle]
pub extern "C" fn zkr_ensemble_config_free(config: *mut zkr_ensemble_config) {
    free_returned("zkr_ensemble_config_free", config, |c| {
        zkr_string_free(c.connect_string);
        zkr_string_free(c.data);
        // SAFETY: the members of a config `config_box` made with `give_array`, taken back once
        // with the config.
        unsafe { take_array(c.members, c.len) }
            .into_iter()
            .for_each(free_member)
    })
}

/// The ensemble's configuration (`/zookeeper/config`, Curator's getConfig().forEnsemble()) in
/// `*config` (free with zkr_ensemble_config_free): its members with their ids, addresses,
/// roles and client ports, and its version. Any session may read it; a server without dynamic
/// configuration lists its static members (with client port 0 where the configuration names
/// none).
#[no_mangle]
pub extern "C" fn zkr_client_get_config(
    c: *mut zkr_client,
    config: *mut *mut zkr_ensemble_config,
) -> zkr_status {
    handle_out("zkr_client_get_config", c, config, "config", |c| {
        config_box(&wait(c.open("get_config")?.get_config())?)
    })
}

/// `len` C strings at `lines` (NULL only with 0), as owned strings.
fn lines(lines: *const *const c_char, len: usize, what: &str) -> Result<Vec<String>> {
    arg_slice(lines, len, what)?
        .iter()
        .enumerate()
        .map(|(i, &l)| arg_str(l, &format!("{what}[{i}]")).map(str::to_string))
        .collect()
}

/// Changes the ensemble's members (ZooKeeper's reconfig, Curator's reconfig()) and, if
/// `config` is not NULL, gives the new configuration in `*config` (free with
/// zkr_ensemble_config_free).
///
/// Incremental (`new_members` NULL): add the `joining_len` servers at `joining`
/// ("server.ID=HOST:QUORUM:ELECTION[:ROLE];[HOST:]CLIENTPORT" lines, as
/// zkr_ensemble_member.server_line gives them) and remove the `leaving_len` member ids at
/// `leaving` (both may be empty). Otherwise the ensemble becomes exactly the `new_members_len`
/// servers at `new_members`, and `joining`/`leaving` must be empty. `from_version` -1 applies
/// the change to whatever configuration is current; otherwise only if it is still that
/// version (ZKR_BAD_VERSION if not).
///
/// Needs servers with reconfigEnabled=true (else ZKR_SERVER, ZooKeeper's code -123 in the
/// message) and a session allowed to write /zookeeper/config: a superuser (opts.auth digest)
/// or servers with skipACL (else ZKR_NO_AUTH). Joining servers must be running and synced with
/// the leader first (else ZKR_SERVER, code -13). Bad lines, a server both joining and leaving,
/// new members with joining/leaving, or a negative version other than -1 are
/// ZKR_INVALID_ARGUMENT before anything is sent. Safe to repeat after a lost reply: the change
/// is not sent again once it is in effect. With a `from_version`, a version that is no longer
/// current is ZKR_BAD_VERSION before anything is sent, and a change of nothing but the version
/// whose reply was lost while the version moved is ZKR_OUTCOME_UNKNOWN.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn zkr_client_reconfig(
    c: *mut zkr_client,
    joining: *const *const c_char,
    joining_len: usize,
    leaving: *const u64,
    leaving_len: usize,
    new_members: *const *const c_char,
    new_members_len: usize,
    from_version: i64,
    config: *mut *mut zkr_ensemble_config,
) -> zkr_status {
    handle_call("zkr_client_reconfig", c, |c| {
        let joining = lines(joining, joining_len, "joining")?;
        let leaving = arg_slice(leaving, leaving_len, "leaving")?.to_vec();
        let mut change = if new_members.is_null() {
            if new_members_len != 0 {
                return Err(Error::InvalidArgument(
                    format!("new_members is NULL with new_members_len {new_members_len}").into(),
                ));
            }
            Reconfig::incremental()
        } else {
            let members = lines(new_members, new_members_len, "new_members")?;
            if members.is_empty() {
                return Err(Error::InvalidArgument(
                    "new_members is empty: an ensemble needs members (NULL for an incremental change)"
                        .into(),
                ));
            }
            Reconfig::new_members(members)
        };
        change = change.joining(joining).leaving(leaving);
        match from_version {
            -1 => {}
            v if v < 0 => {
                return Err(Error::InvalidArgument(
                    format!("from_version is {v}: use -1 for the current configuration").into(),
                ))
            }
            v => change = change.from_config(v),
        }
        let out = arg_out_opt(config);
        let new = wait(c.open("reconfig")?.reconfig(change))?;
        if let Some(out) = out {
            out.write(config_box(&new)?);
        }
        Ok(())
    })
}

/// The servers the client connects to now, in `*hosts` (free with zkr_string_free): the
/// connect string it was made with or, with opts.track_ensemble, the ensemble's members as the
/// tracker last read them (with the connect string's chroot).
#[no_mangle]
pub extern "C" fn zkr_client_current_connect_string(
    c: *mut zkr_client,
    hosts: *mut *mut c_char,
) -> zkr_status {
    handle_out(
        "zkr_client_current_connect_string",
        c,
        hosts,
        "hosts",
        |c| c_string(&c.open("current_connect_string")?.current_connect_string()),
    )
}

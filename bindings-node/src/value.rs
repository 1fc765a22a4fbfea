//! Plain values built off the JS thread and turned into JS values on it (results of Promises,
//! event payloads: stats, AtomicValues, participants). No lifetimes, so they can cross threads.

use napi::bindgen_prelude::{BigInt, Buffer, Null, Object, ToNapiValue};
use napi::{sys, Env};
use zkrecipes::leader::Participant;

/// A JS value in the making (public only because napi signatures name it).
#[derive(Clone, Debug)]
pub enum Out {
    Undefined,
    Null,
    Bool(bool),
    /// A JS number (32-bit counts, versions, milliseconds).
    Number(f64),
    /// A BigInt (zxids, session ids, 64-bit counters, fencing tokens).
    BigInt(i64),
    /// A BigInt from an unsigned 64-bit value (owner ids).
    U64(u64),
    Str(String),
    Bytes(Vec<u8>),
    Array(Vec<Out>),
    Object(Vec<(&'static str, Out)>),
}

impl Out {
    /// A ZooKeeper Stat as `{ czxid, mzxid, pzxid, ctime, mtime, version, cversion, aversion,
    /// ephemeralOwner, dataLength, numChildren }` (zxids and the owner session as BigInt).
    pub(crate) fn stat(s: &zkrecipes::Stat) -> Out {
        Out::Object(vec![
            ("czxid", Out::BigInt(s.czxid)),
            ("mzxid", Out::BigInt(s.mzxid)),
            ("pzxid", Out::BigInt(s.pzxid)),
            ("ctime", Out::Number(s.ctime as f64)),
            ("mtime", Out::Number(s.mtime as f64)),
            ("version", Out::Number(s.version as f64)),
            ("cversion", Out::Number(s.cversion as f64)),
            ("aversion", Out::Number(s.aversion as f64)),
            ("ephemeralOwner", Out::BigInt(s.ephemeral_owner)),
            ("dataLength", Out::Number(s.data_length as f64)),
            ("numChildren", Out::Number(s.num_children as f64)),
        ])
    }

    /// A list of strings.
    pub(crate) fn strings(v: Vec<String>) -> Out {
        Out::Array(v.into_iter().map(Out::Str).collect())
    }

    /// A leader-election participant as `{ id, isLeader }`.
    pub(crate) fn participant(p: &Participant) -> Out {
        Out::Object(vec![
            ("id", Out::Str(p.id.clone())),
            ("isLeader", Out::Bool(p.is_leader)),
        ])
    }

    /// Participants in order.
    pub(crate) fn participants(v: &[Participant]) -> Out {
        Out::Array(v.iter().map(Out::participant).collect())
    }
}

impl ToNapiValue for Out {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        // SAFETY: napi calls this on the JS thread with a live `env` (the trait's contract);
        // each arm hands that same `env` to the conversion of a plain Rust value.
        unsafe {
            match val {
                Out::Undefined => <()>::to_napi_value(env, ()),
                Out::Null => Null::to_napi_value(env, Null),
                Out::Bool(b) => bool::to_napi_value(env, b),
                Out::Number(n) => f64::to_napi_value(env, n),
                Out::BigInt(v) => BigInt::to_napi_value(env, BigInt::from(v)),
                Out::U64(v) => BigInt::to_napi_value(env, BigInt::from(v)),
                Out::Str(s) => String::to_napi_value(env, s),
                Out::Bytes(b) => Buffer::to_napi_value(env, Buffer::from(b)),
                Out::Array(items) => Vec::<Out>::to_napi_value(env, items),
                Out::Object(fields) => {
                    let env = Env::from_raw(env);
                    let mut obj = Object::new(&env)?;
                    for (k, v) in fields {
                        obj.set(k, v)?;
                    }
                    Object::to_napi_value(env.raw(), obj)
                }
            }
        }
    }
}

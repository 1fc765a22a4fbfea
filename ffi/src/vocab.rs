//! The core's vocabulary in C: every C enumeration of values (create modes, watch events,
//! connection states, cancel reasons, log levels) is one of the core's lists (`ALL`) in order,
//! numbered from a first value. The C constants are spelled out in the sources because cbindgen
//! needs them there; the conversions below go through the core's lists only, and the unit test
//! checks the generated header against those lists, names and numbers.

use std::ffi::{c_char, CString};
use std::sync::OnceLock;

use zkrecipes::{Error, Result};

/// A core list as C numbers: `ALL[i]` is `FIRST + i`.
pub(crate) struct CList<T: 'static> {
    pub(crate) all: &'static [T],
    pub(crate) first: u32,
    /// How the C constants are named: `ZKR_STATE_` + the core's name.
    pub(crate) prefix: &'static str,
    pub(crate) name: fn(T) -> &'static str,
}

impl<T: Copy + PartialEq> CList<T> {
    /// The core value of a C number, or `InvalidArgument` naming `what` and the choices.
    pub(crate) fn parse(&self, value: u32, what: &str) -> Result<T> {
        self.get(value).ok_or_else(|| {
            let choices: Vec<String> = self
                .all
                .iter()
                .map(|v| format!("{}{}", self.prefix, (self.name)(*v)))
                .collect();
            Error::InvalidArgument(
                format!("{what} is {value}: expected one of {}", choices.join(", ")).into(),
            )
        })
    }

    pub(crate) fn get(&self, value: u32) -> Option<T> {
        let i = value.checked_sub(self.first)?;
        self.all.get(i as usize).copied()
    }

    /// The C number of a core value.
    pub(crate) fn to_c(&self, value: T) -> u32 {
        let i = self.all.iter().position(|v| *v == value).unwrap_or(0);
        self.first + i as u32
    }

    /// The core's name of a C number as a static C string (`None` for an unknown number).
    pub(crate) fn c_name(
        &self,
        names: &'static OnceLock<Vec<CString>>,
        value: u32,
    ) -> Option<*const c_char> {
        let names = names.get_or_init(|| {
            self.all
                .iter()
                .map(|v| CString::new((self.name)(*v)).expect("names have no NUL"))
                .collect()
        });
        let i = value.checked_sub(self.first)? as usize;
        names.get(i).map(|n| n.as_ptr())
    }
}

/// For a C enum `$e` whose variants, listed in order, are the core type `$core`'s list from
/// `$first` (cbindgen needs the enum written out; the test below checks it): the [`CList`]
/// `$list`, and `$e::of(value)`.
macro_rules! c_enum_of {
    ($e:ident, $list:ident: $core:ident from $first:literal as $prefix:literal, [$($variant:ident),* $(,)?]) => {
        pub(crate) const $list: CList<$core> = CList {
            all: $core::ALL,
            first: $first,
            prefix: $prefix,
            name: $core::name,
        };

        impl $e {
            pub(crate) fn of(value: $core) -> $e {
                [$($e::$variant),*][($list.to_c(value) - $list.first) as usize]
            }
        }
    };
}
pub(crate) use c_enum_of;

#[cfg(test)]
mod tests {
    use zkrecipes::leader::CancelReason;
    use zkrecipes::log::Level;
    use zkrecipes::{ConnectionState, CreateMode, NodeEventKind};

    use super::CList;
    use crate::client::{CREATE_MODES, STATES, WATCH_EVENTS};
    use crate::leader::CANCEL_REASONS;
    use crate::log::LEVELS;

    fn header() -> String {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../include/zkrecipes.h");
        std::fs::read_to_string(path).expect("include/zkrecipes.h")
    }

    /// Every value of the core's list is in the header as `<prefix><NAME>` with its number, as
    /// a `#define` or an enum constant.
    fn check<T: Copy + PartialEq + std::fmt::Debug>(
        list: &CList<T>,
        spelled: impl Fn(&str) -> String,
    ) {
        let h = header();
        for (i, v) in list.all.iter().enumerate() {
            let name = spelled((list.name)(*v));
            let n = list.first + i as u32;
            let (define, constant) = (format!("#define {name} {n}"), format!("{name} = {n},"));
            let found = h
                .lines()
                .any(|l| l.trim() == define || l.trim() == constant);
            assert!(found, "{name} = {n} is not in include/zkrecipes.h");
            assert_eq!(list.get(n), Some(*v));
            assert_eq!(list.to_c(*v), n);
        }
        assert!(list.get(list.first + list.all.len() as u32).is_none());
        assert!(list.parse(999, "x").is_err());
    }

    #[test]
    fn the_c_constants_are_the_cores_lists_in_order() {
        let plain = |prefix: &'static str| move |name: &str| format!("{prefix}{name}");
        check(&CREATE_MODES, plain("ZKR_"));
        check(&STATES, plain("ZKR_STATE_"));
        check(&CANCEL_REASONS, plain("ZKR_CANCEL_"));
        check(&LEVELS, plain("ZKR_LOG_"));
        check(&crate::nodes::NODE_EVENTS, plain("ZKR_NODE_"));
        check(&crate::partition::PARTITION_STATES, plain("ZKR_PARTITION_"));
        // Two watch events keep their first C spellings.
        check(&WATCH_EVENTS, |name| match name {
            "DATA_CHANGED" => "ZKR_WATCH_CHANGED".into(),
            "CHILDREN_CHANGED" => "ZKR_WATCH_CHILD".into(),
            "WATCH_REMOVED" => "ZKR_WATCH_REMOVED".into(),
            other => format!("ZKR_WATCH_{other}"),
        });
        assert_eq!(CREATE_MODES.all, CreateMode::ALL);
        assert_eq!(STATES.all, ConnectionState::ALL);
        assert_eq!(CANCEL_REASONS.all, CancelReason::ALL);
        assert_eq!(LEVELS.all, Level::ALL);
        assert_eq!(WATCH_EVENTS.all, NodeEventKind::ALL);
        check(&crate::watches::WATCHER_TYPES, plain("ZKR_WATCHER_TYPE_"));
        check(
            &crate::semaphore::LEASE_LOST_KINDS,
            plain("ZKR_LEASE_LOST_"),
        );
        assert_eq!(
            crate::watches::WATCHER_TYPES.all,
            zkrecipes::WatcherType::ALL
        );
    }
}

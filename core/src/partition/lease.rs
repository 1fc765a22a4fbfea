//! kazoo's NonBlockingLease and MultiNonBlockingLease.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::kazoo_lock::KazooLock;
use crate::client::{CreateMode, Op, Parents};
use crate::{path, runtime, Client, Error, Result};

/// kazoo's `NonBlockingLease._version`: a holder node of another version is left alone (the
/// lease is not obtained), as kazoo does ("we need an upgrade, let someone else take it").
pub const LEASE_VERSION: i64 = 1;

/// The holder node's name under the lease path.
pub const HOLDER_NODE: &str = "lease_holder";

/// Options of [`NonBlockingLease::obtain`] and [`MultiNonBlockingLease::obtain`].
#[derive(Clone, Debug, Default)]
pub struct LeaseOptions {
    /// Who holds the lease; obtaining again with the same identifier renews it. Default: this
    /// host's name (kazoo's `socket.gethostname()`), so every process of one host shares it.
    pub identifier: Option<String>,
    /// The clock reading to use instead of the system clock (kazoo's `utcnow`, for tests).
    /// kazoo reads its clock after taking the lock; a fixed reading given here is used as is.
    pub now: Option<SystemTime>,
    /// How long to wait for the lease's lock (held by another contender for a few requests
    /// at most); `None` waits as long as it takes, as kazoo does. Running out is `Timeout`.
    pub lock_timeout: Option<Duration>,
}

/// kazoo's NonBlockingLease: an exclusive lease on `path` until a wall-clock end, taken without
/// waiting for it. [`obtain`](Self::obtain) takes the lease when nobody else holds an unexpired
/// one (or when we hold it: that renews it) and says whether it did; nothing is released — the
/// lease simply ends.
///
/// Under kazoo's Lock at `path` (data: the identifier), it reads `path/lease_holder` (`{"version":
/// 1, "holder": ID, "end": "YYYY-MM-DDTHH:MM:SS"}`, UTC): another holder whose end has not
/// passed keeps it; otherwise the node is replaced with ours, ending at now + duration (whole
/// seconds, as kazoo's `strftime` truncates). Holders compare client clocks: they must be
/// roughly synchronised, as kazoo says.
///
/// Unlike kazoo, the holder node is written in one transaction with a check of our lock node:
/// a decision whose lock was lost before its write (the session ended and the server deleted the
/// lock node, while the client went on on a new session) writes nothing and does not obtain the
/// lease, where kazoo would write over the next holder's decision. A renewal rewrites the node
/// in place (kazoo deletes it and creates it again), so the lease is never free while renewed.
///
/// Unlike kazoo, a holder node that cannot be read (not JSON, a field missing or of the wrong
/// type, a date in another format) is `CorruptedData` rather than a Python exception, and it is
/// left as it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NonBlockingLease {
    path: String,
    identifier: String,
    obtained: bool,
    end: Option<SystemTime>,
}

impl NonBlockingLease {
    /// Tries to obtain the lease at `path` for `duration`.
    ///
    /// Errors: `InvalidArgument` for a bad path, an empty identifier, or an end past year 9999;
    /// `CorruptedData` for a holder node we cannot read; `Timeout` when the lease's lock was not
    /// had within `lock_timeout`; `Closed`; connection errors after the retry policy.
    pub async fn obtain(
        client: &Client,
        path: &str,
        duration: Duration,
        options: LeaseOptions,
    ) -> Result<NonBlockingLease> {
        client.ensure_open_for("NonBlockingLease", path)?;
        path::validate_path(path)?;
        let identifier = options.identifier.unwrap_or_else(super::hostname);
        if identifier.is_empty() {
            return Err(Error::invalid("a lease identifier must not be empty"));
        }
        client.ensure_path(path, Parents::Persistent).await?;
        let lock = KazooLock::new(client, path);
        let held = lock
            .acquire(identifier.as_bytes(), options.lock_timeout, None)
            .await?
            .ok_or_else(|| {
                Error::Timeout(
                    format!(
                        "lease {path}: its lock was not had within {:?}",
                        options.lock_timeout.unwrap_or_default()
                    )
                    .into(),
                )
            })?;
        let result = Self::decide(
            client,
            path,
            held.path(),
            duration,
            &identifier,
            options.now,
        )
        .await;
        let released = held.release().await;
        let end = result?;
        // A failed release must not hide a lease written (the lock node goes with the session,
        // or the guaranteed delete removes it): the caller would think it has no lease while
        // the holder node names it until its end.
        match released {
            Err(e) if end.is_some() => {
                tracing::warn!(%path, %identifier, error = %e, "lease obtained; its lock's release goes on in the background");
            }
            other => other?,
        }
        if end.is_some() {
            tracing::debug!(%path, %identifier, "lease obtained");
        }
        Ok(NonBlockingLease {
            path: path.to_string(),
            identifier,
            obtained: end.is_some(),
            end,
        })
    }

    /// Under the lock (our node at `lock`): the new end when we take the lease, `None` when
    /// someone else keeps it or the lock was lost before we wrote.
    async fn decide(
        client: &Client,
        path: &str,
        lock: &str,
        duration: Duration,
        identifier: &str,
        now: Option<SystemTime>,
    ) -> Result<Option<SystemTime>> {
        let holder_path = path::join(path, HOLDER_NODE);
        let now = now.unwrap_or_else(SystemTime::now);
        let end = now
            .checked_add(duration)
            .filter(|e| *e < max_time())
            .ok_or_else(|| Error::invalid(format!("lease duration {duration:?} ends past 9999")))?;
        let data = HolderData::encode(identifier, end);
        match client.get_data(&holder_path).await {
            Ok((raw, stat)) => {
                let current = HolderData::decode(&raw).map_err(|why| {
                    Error::CorruptedData(format!("lease holder {holder_path}: {why}").into())
                })?;
                if current.version != Some(LEASE_VERSION) {
                    tracing::info!(%path, version = ?current.version, "lease holder of another version: not taken");
                    return Ok(None);
                }
                let (holder, held_until) = current.fields().map_err(|why| {
                    Error::CorruptedData(format!("lease holder {holder_path}: {why}").into())
                })?;
                let current_end = parse_time(held_until).ok_or_else(|| {
                    Error::CorruptedData(
                        format!(
                            "lease holder {holder_path}: end {held_until:?} is not YYYY-MM-DDTHH:MM:SS"
                        )
                        .into(),
                    )
                })?;
                if holder != Some(identifier) && now < current_end {
                    return Ok(None);
                }
                // Rewritten in place at the version read (kazoo deletes it and creates it
                // again): the holder node is never absent, so a renewal that fails or is
                // dropped half way cannot free a lease its holder still counts on.
                match write_holder(client, lock, &holder_path, &data, Some(stat.version)).await {
                    Err(Error::NoNode(_)) => {} // deleted by hand meanwhile: made below
                    written => return Ok(written?.then(|| truncate(end))),
                }
            }
            Err(Error::NoNode(_)) => {}
            Err(e) => return Err(e),
        }
        Ok(write_holder(client, lock, &holder_path, &data, None)
            .await?
            .then(|| truncate(end)))
    }

    /// [`obtain`](Self::obtain) for the blocking face.
    pub fn obtain_blocking(
        client: &Client,
        path: &str,
        duration: Duration,
        options: LeaseOptions,
    ) -> Result<NonBlockingLease> {
        runtime::try_block_on(Self::obtain(client, path, duration, options))?
    }

    /// Whether the lease was obtained (kazoo's truthiness).
    pub fn obtained(&self) -> bool {
        self.obtained
    }

    /// When our lease ends (whole seconds, as stored), if obtained.
    pub fn end(&self) -> Option<SystemTime> {
        self.end
    }

    /// The lease path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The identifier used.
    pub fn identifier(&self) -> &str {
        &self.identifier
    }
}

/// kazoo's MultiNonBlockingLease: one of `count` leases, `path/0` … `path/count-1`, tried in
/// order; obtained when any of them is (the first that is; the rest are not tried).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MultiNonBlockingLease {
    obtained: Option<NonBlockingLease>,
    index: Option<u32>,
}

impl MultiNonBlockingLease {
    /// Tries `path/0`, `path/1`, … in order until one is obtained.
    ///
    /// Errors: as [`NonBlockingLease::obtain`]; `InvalidArgument` for a count of 0.
    pub async fn obtain(
        client: &Client,
        count: u32,
        path: &str,
        duration: Duration,
        options: LeaseOptions,
    ) -> Result<MultiNonBlockingLease> {
        client.ensure_open_for("MultiNonBlockingLease", path)?;
        path::validate_path(path)?;
        if count == 0 {
            return Err(Error::invalid(
                "a MultiNonBlockingLease needs a count of at least 1",
            ));
        }
        let mut options = options;
        if options.identifier.is_none() {
            options.identifier = Some(super::hostname());
        }
        for i in 0..count {
            let lease = NonBlockingLease::obtain(
                client,
                &path::join(path, &i.to_string()),
                duration,
                options.clone(),
            )
            .await?;
            if lease.obtained() {
                return Ok(MultiNonBlockingLease {
                    obtained: Some(lease),
                    index: Some(i),
                });
            }
        }
        Ok(MultiNonBlockingLease {
            obtained: None,
            index: None,
        })
    }

    /// [`obtain`](Self::obtain) for the blocking face.
    pub fn obtain_blocking(
        client: &Client,
        count: u32,
        path: &str,
        duration: Duration,
        options: LeaseOptions,
    ) -> Result<MultiNonBlockingLease> {
        runtime::try_block_on(Self::obtain(client, count, path, duration, options))?
    }

    /// Whether one of the leases was obtained (kazoo's truthiness).
    pub fn obtained(&self) -> bool {
        self.obtained.is_some()
    }

    /// Which one (`path/index`), if obtained.
    pub fn index(&self) -> Option<u32> {
        self.index
    }

    /// The lease obtained.
    pub fn lease(&self) -> Option<&NonBlockingLease> {
        self.obtained.as_ref()
    }
}

/// The holder node, as kazoo reads it: `version` first (another version ends the reading),
/// then `end` and `holder`.
struct HolderData {
    version: Option<i64>,
    fields: serde_json::Map<String, serde_json::Value>,
}

impl HolderData {
    fn decode(raw: &[u8]) -> std::result::Result<HolderData, String> {
        let v: serde_json::Value =
            serde_json::from_slice(raw).map_err(|e| format!("not JSON: {e}"))?;
        let serde_json::Value::Object(fields) = v else {
            return Err("not a JSON object".into());
        };
        let version = fields.get("version").ok_or("no \"version\"")?.as_i64();
        Ok(HolderData { version, fields })
    }

    /// (holder, end) of a version-1 node. A holder that is not a string is nobody we could be
    /// (kazoo compares it with our identifier): `None`.
    fn fields(&self) -> std::result::Result<(Option<&str>, &str), String> {
        let end = self
            .fields
            .get("end")
            .and_then(|e| e.as_str())
            .ok_or("no \"end\" string")?;
        let holder = self.fields.get("holder").ok_or("no \"holder\"")?;
        Ok((holder.as_str(), end))
    }

    /// Python's `json.dumps({"version": 1, "holder": id, "end": end})`: `", "` and `": "`
    /// separators, non-ASCII as `\uXXXX` (surrogate pairs beyond the BMP).
    fn encode(identifier: &str, end: SystemTime) -> Vec<u8> {
        format!(
            "{{\"version\": {LEASE_VERSION}, \"holder\": {}, \"end\": \"{}\"}}",
            python_json_string(identifier),
            format_time(end)
        )
        .into_bytes()
    }
}

/// A string as Python's `json.dumps` writes it (`ensure_ascii=True`).
pub(crate) fn python_json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            }
        }
    }
    out.push('"');
    out
}

/// Writes the lease's holder node (`version`: a `set_data` at it; `None`: a create) in one
/// transaction with a check of our lock node, so that a decision made under a lock that was
/// lost meanwhile writes nothing: when our session ends, the server deletes the lock node and the
/// next contender decides; the client may already be on a new session, where a bare write would
/// still be applied, over the next holder's. `Ok(false)`: the lock was gone, nothing written.
/// A try whose reply was lost is resent by the retry policy; a resend that fails finds our
/// holder data in place when the lost try was applied (one transaction: under our lock).
async fn write_holder(
    client: &Client,
    lock: &str,
    holder_path: &str,
    data: &[u8],
    version: Option<i32>,
) -> Result<bool> {
    let write = match version {
        Some(version) => Op::SetData {
            path: holder_path.to_string(),
            data: data.to_vec(),
            version: Some(version),
        },
        None => Op::Create {
            path: holder_path.to_string(),
            data: data.to_vec(),
            mode: CreateMode::Persistent,
            ttl: None,
            acl: None,
        },
    };
    let ops = [
        Op::Check {
            path: lock.to_string(),
            version: -1,
        },
        write,
    ];
    let ops = &ops;
    let err = match client.retry(|s| async move { s.multi(ops).await }).await {
        Ok(_) => return Ok(true),
        Err(e) => e,
    };
    if client
        .get_data(holder_path)
        .await
        .is_ok_and(|(d, _)| d == data)
    {
        return Ok(true);
    }
    match err {
        Error::NoNode(_) if err.failed_op() == Some(0) => {
            tracing::warn!(%holder_path, %lock, "the lease's lock was lost before its holder was written (its session ended?): not obtained");
            Ok(false)
        }
        e => Err(e),
    }
}

/// 10000-01-01T00:00:00Z: `%Y` has four digits up to here.
fn max_time() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(253_402_300_800)
}

fn truncate(t: SystemTime) -> SystemTime {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    UNIX_EPOCH + Duration::from_secs(secs)
}

/// `%Y-%m-%dT%H:%M:%S` in UTC, the fraction dropped (kazoo's `strftime`). Times before 1970 are
/// not written (a lease ends after now).
pub(crate) fn format_time(t: SystemTime) -> String {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Python's `strptime(s, "%Y-%m-%dT%H:%M:%S")`, as UTC: four-digit year, two-digit fields
/// (Python also takes one digit; kazoo never writes one), a valid date and time.
pub(crate) fn parse_time(s: &str) -> Option<SystemTime> {
    let b = s.as_bytes();
    if b.len() != 19
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = &s[r];
        t.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| t.parse().ok())
            .flatten()
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, se) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || se > 61
    {
        return None;
    }
    let days = days_from_civil(y, mo, d);
    let secs = days * 86_400 + h * 3600 + mi * 60 + se.min(59);
    if secs < 0 {
        return Some(UNIX_EPOCH);
    }
    Some(UNIX_EPOCH + Duration::from_secs(secs as u64))
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 → (year, month, day), proleptic Gregorian (Howard Hinnant's
/// `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// (year, month, day) → days since 1970-01-01 (Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn times_as_kazoo_writes_and_reads_them() {
        assert_eq!(format_time(at(0)), "1970-01-01T00:00:00");
        // date -u -d @1709251199 → 2024-02-29 23:59:59 (a leap day).
        assert_eq!(format_time(at(1_709_251_199)), "2024-02-29T23:59:59");
        assert_eq!(
            format_time(at(1_709_251_199) + Duration::from_millis(999)),
            "2024-02-29T23:59:59",
            "the fraction is dropped, as strftime drops it"
        );
        assert_eq!(format_time(at(253_402_300_799)), "9999-12-31T23:59:59");
        for secs in [
            0,
            59,
            86_399,
            951_782_400,
            1_709_251_199,
            4_102_444_800,
            253_402_300_799,
        ] {
            assert_eq!(parse_time(&format_time(at(secs))), Some(at(secs)), "{secs}");
        }
        for bad in [
            "2024-02-30T00:00:00",
            "2023-02-29T00:00:00",
            "2024-13-01T00:00:00",
            "2024-01-01 00:00:00",
            "2024-01-01T24:00:00",
            "2024-1-01T00:00:00",
            "2024-01-01T00:00:00Z",
            "+024-01-01T00:00:00",
            "",
        ] {
            assert_eq!(parse_time(bad), None, "{bad}");
        }
    }

    #[test]
    fn holder_data_is_python_json_dumps_byte_for_byte() {
        let data = HolderData::encode("host-1", at(1_709_251_199));
        assert_eq!(
            String::from_utf8(data).unwrap(),
            r#"{"version": 1, "holder": "host-1", "end": "2024-02-29T23:59:59"}"#
        );
        // json.dumps("é\"\\😀\n") == '"\\u00e9\\"\\\\\\ud83d\\ude00\\n"'
        assert_eq!(
            python_json_string("é\"\\😀\n"),
            r#""\u00e9\"\\\ud83d\ude00\n""#
        );
        let back = HolderData::decode(&HolderData::encode("é😀", at(5))).unwrap();
        assert_eq!(back.version, Some(1));
        assert_eq!(back.fields().unwrap(), (Some("é😀"), "1970-01-01T00:00:05"));
    }

    #[test]
    fn holder_data_that_cannot_be_read_is_refused() {
        for bad in [
            &b"not json"[..],
            b"[1]",
            br#"{"holder": "a", "end": "2024-01-01T00:00:00"}"#,
        ] {
            assert!(
                HolderData::decode(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        for bad in [
            &br#"{"version": 1, "end": "2024-01-01T00:00:00"}"#[..],
            br#"{"version": 1, "holder": "a"}"#,
            br#"{"version": 1, "holder": "a", "end": 5}"#,
        ] {
            let d = HolderData::decode(bad).unwrap();
            assert!(d.fields().is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
        // Another version is read no further (kazoo returns before reading the rest).
        let other = HolderData::decode(br#"{"version": 2}"#).unwrap();
        assert_eq!(other.version, Some(2));
        let odd = HolderData::decode(br#"{"version": 1, "holder": 7, "end": "x"}"#).unwrap();
        assert_eq!(odd.fields().unwrap(), (None, "x"));
    }
}

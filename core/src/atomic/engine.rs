//! One value node (a counter's, a `DistributedAtomicValue`'s, a `SharedValue`'s): reads,
//! conditional writes, and what to do when a write's reply is lost. The node's bytes are read
//! and written through a [`Codec`]: the counters' big-endian numbers ([`Width`], [`Int32`]) or
//! the bytes as they are ([`Bytes`]); every rule below is the same for all of them.
//!
//! # Exactly once, or say so
//!
//! A conditional write (`setData` at the version we read, or `create` when the node was
//! missing) whose reply is lost — connection loss, operation timeout, session expiry — may or
//! may not have been applied. Retrying it blindly is how counters double-count (kazoo's
//! Counter does that; so does Curator, whose `setData` retries on connection loss inside the
//! framework and then treats the retry's `BadVersion` as "lost the race, read and add again").
//! We never resend a write before learning what happened to the first one:
//!
//! 1. Once connected again, send `sync` and then `getData`, pipelined on the same session. A
//!    session's requests are executed in order, and `sync` makes the server we talk to catch up
//!    with the leader. The lost write either was ordered before the `sync` — then the read sees
//!    it — or it can never be applied any more: after a reconnection to another server the
//!    leader rejects requests still in flight from the old one (the session moved), and after
//!    a session expiry the old session's requests are rejected. So what the read shows is
//!    final.
//! 2. Compare with what the write would have produced (same incarnation of the node: same
//!    `czxid`):
//!    * version unchanged → not applied, and it never will be: resend (the resend is again
//!      conditional on that version, so at most one copy can ever apply);
//!    * version + 1 and different data → another writer won that version; ours was refused:
//!      a plain conflict, read and try again;
//!    * version + 1 and exactly our data → **unknown**. Another session that read the same
//!      value at the same version and wrote the same bytes (two `increment`s from 41 both write
//!      42) leaves exactly the same node behind, and ZooKeeper does not record who wrote a
//!      version. Claiming "applied" could lose an increment, claiming "not applied" could
//!      double one, so we report [`Error::OutcomeUnknown`];
//!    * version further on, the node gone or recreated → **unknown**: our write may have been
//!      one of the versions in between.
//!
//!    For a `create` (node missing): still missing → resend; present at version 0 with other
//!    data → someone else created it, a conflict; otherwise unknown.
//! 3. If the re-read itself cannot be done (the retry policy gives up, the client is closed),
//!    the outcome is unknown.
//!
//! Residual assumption: counters are not deleted and recreated behind our back (a recreated
//! node at the same version as our cached one is indistinguishable at write time; we limit
//! how long a cached version is trusted to [`CACHE_TTL`] and check `czxid` when we can).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::{version_minus_one, Width};
use crate::client::{OrNone, Parents, Session};
use crate::{path, Client, CreateMode, Error, Result, Stat};

/// How a value node's bytes become a value and back.
pub(crate) trait Codec: Send + Sync + 'static {
    /// The decoded value.
    type Value: Clone + PartialEq + std::fmt::Debug + Send + Sync + 'static;
    /// The bytes written for `value`.
    fn encode(&self, value: &Self::Value) -> Vec<u8>;
    /// The value of a node's bytes; `CorruptedData` naming `path` if they are not one.
    fn decode(&self, path: &str, data: &[u8]) -> Result<Self::Value>;
    /// What the recipe calls the node in messages ("counter", "value").
    fn noun(&self) -> &'static str;
}

impl Codec for Width {
    type Value = i64;
    fn encode(&self, value: &i64) -> Vec<u8> {
        Width::encode(*self, *value)
    }
    fn decode(&self, path: &str, data: &[u8]) -> Result<i64> {
        Width::decode(*self, path, data)
    }
    fn noun(&self) -> &'static str {
        "counter"
    }
}

/// `SharedCount`'s 4-byte big-endian `int`, as an `i32`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Int32;

impl Codec for Int32 {
    type Value = i32;
    fn encode(&self, value: &i32) -> Vec<u8> {
        value.to_be_bytes().to_vec()
    }
    fn decode(&self, path: &str, data: &[u8]) -> Result<i32> {
        Width::I32.decode(path, data).map(|v| v as i32)
    }
    fn noun(&self) -> &'static str {
        "counter"
    }
}

/// The node's bytes as they are (`DistributedAtomicValue`, `SharedValue`): nothing is corrupt.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bytes;

impl Codec for Bytes {
    type Value = Vec<u8>;
    fn encode(&self, value: &Vec<u8>) -> Vec<u8> {
        value.clone()
    }
    fn decode(&self, _path: &str, data: &[u8]) -> Result<Vec<u8>> {
        Ok(data.to_vec())
    }
    fn noun(&self) -> &'static str {
        "value"
    }
}

/// How long a cached (version, value) is tried before reading the node first. Bounds the
/// window in which a deleted-and-recreated counter could be mistaken for the cached one.
pub(crate) const CACHE_TTL: Duration = Duration::from_secs(1);

/// What we know of the value node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Known<V> {
    /// The node does not exist (a counter counts it as 0); the next write creates it.
    Missing,
    /// The node at data version `version`, created at `czxid`, holding `value`.
    Present { version: i32, czxid: i64, value: V },
}

impl<V> Known<V> {
    /// The value, `None` for a missing node.
    pub(crate) fn get(&self) -> Option<&V> {
        match self {
            Known::Missing => None,
            Known::Present { value, .. } => Some(value),
        }
    }
}

impl<V> Known<V> {
    /// The node's place (version and `czxid`, or missing) without its value.
    pub(crate) fn place(&self) -> Known<()> {
        match self {
            Known::Missing => Known::Missing,
            Known::Present { version, czxid, .. } => Known::Present {
                version: *version,
                czxid: *czxid,
                value: (),
            },
        }
    }
}

impl Known<i64> {
    /// A counter's value: a missing node counts as 0 (Curator's rule).
    pub(crate) fn value(&self) -> i64 {
        self.get().copied().unwrap_or(0)
    }
}

/// A conditional write that certainly applied, or certainly did not because the node had moved
/// on (another writer won).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Written<V> {
    Applied(Known<V>),
    Conflict,
}

/// What a re-read after a lost reply says about our write.
enum Resolution {
    /// Not applied and never will be; the node is where we expected: resend.
    Unchanged,
    /// Not applied: another writer got there first.
    Superseded,
    /// Cannot be known.
    Unknown(String),
}

/// The node's place (version and `czxid`) from its stat.
fn place_of(stat: &Stat) -> Known<()> {
    Known::Present {
        version: stat.version,
        czxid: stat.czxid,
        value: (),
    }
}

/// Whether `next` is the data version one write after `version`: `version + 1`, wrapping
/// from `i32::MAX` to `i32::MIN`; from -2 also 0 (servers with ZOOKEEPER-4743 skip -1).
fn is_next_version(version: i32, next: i32) -> bool {
    next == version.wrapping_add(1) || (version == -2 && next == 0)
}

/// What a re-read after a lost reply says about a forced write.
enum Forced {
    /// The node holds our bytes.
    Ours(Stat),
    /// Certainly not applied, the node as it was: resend.
    NotApplied,
    /// Our `create` was not applied: another one was (the node at version 0, other bytes).
    MadeByAnother(Stat),
}

/// A value node of one client (a counter's is shared by every instance on that path, via the
/// combiner).
pub(crate) struct Engine<C: Codec> {
    pub(crate) client: Client,
    /// The caller's path (without the namespace).
    pub(crate) path: String,
    pub(crate) codec: C,
    cache: Mutex<Option<(Known<C::Value>, Instant)>>,
}

/// Maps an error of a read (safe to repeat) so that the client's retry loop tries again after
/// anything but a definitive answer or a closed client: an I/O error or a session expiry on
/// one try says nothing about the next one.
pub(crate) fn read_error(e: Error) -> Error {
    match e {
        e @ Error::Closed(_) => e,
        e if e.is_refusal() && !e.is_throttled() => e,
        e => {
            let detail = e.detail().clone();
            Error::ConnectionLoss(detail)
        }
    }
}

impl<C: Codec> Engine<C> {
    pub(crate) fn new(client: Client, path: &str, codec: C) -> Engine<C> {
        Engine {
            client,
            path: path.to_string(),
            codec,
            cache: Mutex::new(None),
        }
    }

    /// "counter /path" or "value /path", for messages.
    pub(crate) fn what(&self) -> String {
        format!("{} {}", self.codec.noun(), self.path)
    }

    pub(crate) fn check_open(&self) -> Result<()> {
        if self.client.is_closed() {
            Err(Error::Closed(
                format!("{}: the client is closed", self.what()).into(),
            ))
        } else {
            Ok(())
        }
    }

    /// The cached knowledge, if recent enough to try a write on.
    pub(crate) fn cached(&self) -> Option<Known<C::Value>> {
        let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .as_ref()
            .filter(|(_, at)| at.elapsed() < CACHE_TTL)
            .map(|(k, _)| k.clone())
    }

    pub(crate) fn remember(&self, known: Known<C::Value>) {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        // Never move the cache back to an older version of the same node (a slow reader racing
        // a fast writer); anything else (a first read, a recreated node) replaces it.
        if let (
            Some((
                Known::Present {
                    version: old,
                    czxid: oc,
                    ..
                },
                _,
            )),
            Known::Present { version, czxid, .. },
        ) = (cache.as_ref(), &known)
        {
            if oc == czxid && super::version_is_newer(*old, *version) {
                return;
            }
        }
        *cache = Some((known, Instant::now()));
    }

    /// What is cached and when it was learned (for a lane to pass on).
    pub(crate) fn learned(&self) -> Option<(Known<C::Value>, Instant)> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Takes `known`, learned at `at` by another client of this process with the same
    /// identity, if it is more recent than what this engine knows. Its age still counts from
    /// `at` ([`CACHE_TTL`]).
    pub(crate) fn adopt(&self, known: Known<C::Value>, at: Instant) {
        keep_newer(
            &mut self.cache.lock().unwrap_or_else(|e| e.into_inner()),
            known,
            at,
        );
    }

    pub(crate) fn forget(&self) {
        *self.cache.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// Turns a read into knowledge: checks the node is a plain persistent node and decodes it.
    pub(crate) fn interpret(&self, got: Option<(Vec<u8>, Stat)>) -> Result<Known<C::Value>> {
        let Some((data, stat)) = got else {
            return Ok(Known::Missing);
        };
        check_value_node(self.codec.noun(), &self.path, &stat, &data)?;
        let value = self.codec.decode(&self.path, &data)?;
        Ok(Known::Present {
            version: stat.version,
            czxid: stat.czxid,
            value,
        })
    }

    /// Reads the node (under the client's retry policy; a read is safe to repeat).
    pub(crate) async fn read(&self) -> Result<Known<C::Value>> {
        self.check_open()?;
        let path = self.path.as_str();
        let got = self
            .client
            .retry(|s| async move { s.get_data(path).await.or_none().map_err(read_error) })
            .await?;
        let known = self.interpret(got)?;
        self.remember(known.clone());
        Ok(known)
    }

    /// Writes `new_value` conditionally on `base` (setData at its version, or create if it was
    /// missing). `Err(OutcomeUnknown)` when the outcome cannot be known; any other error means
    /// not applied.
    pub(crate) async fn write(
        &self,
        base: &Known<C::Value>,
        new_value: C::Value,
    ) -> Result<Written<C::Value>> {
        self.write_while(base, new_value, &|| true)
            .await?
            .ok_or_else(|| Error::Internal("a write nobody withdrew was withdrawn".into()))
    }

    /// [`write`](Self::write) that sends (the first time, and again after a try certainly not
    /// applied) only while `wanted()` says so; `None` once it does not: nothing of this write was
    /// applied, and nothing more is sent. The combiner's callers that gave up (told
    /// `OutcomeUnknown`) must not see their delta written by a send made after they left.
    pub(crate) async fn write_while(
        &self,
        base: &Known<C::Value>,
        new_value: C::Value,
        wanted: &(dyn Fn() -> bool + Send + Sync),
    ) -> Result<Option<Written<C::Value>>> {
        let data = self.codec.encode(&new_value);
        let start = Instant::now();
        let mut resends = 0u32;
        let mut made_parents = false;
        loop {
            let Some(s) = self.write_session(&mut resends, start).await? else {
                continue;
            };
            if !wanted() {
                return Ok(None);
            }
            let sent = match base {
                Known::Present { version: -1, .. } => return Err(version_minus_one(&self.path)),
                Known::Present { version, .. } => {
                    s.set_data(&self.path, &data, Some(*version)).await
                }
                Known::Missing => s
                    .create(&self.path, &data, CreateMode::Persistent)
                    .await
                    .map(|c| c.stat),
            };
            drop(s);
            let err = match (sent, base) {
                (Ok(stat), _) => {
                    if let Known::Present { czxid, .. } = base {
                        if stat.czxid != *czxid {
                            // The node was recreated and reached our cached version: see the
                            // module notes. Trust nothing cached from the old incarnation.
                            self.forget();
                        }
                    }
                    let known = Known::Present {
                        version: stat.version,
                        czxid: stat.czxid,
                        value: new_value,
                    };
                    self.remember(known.clone());
                    return Ok(Some(Written::Applied(known)));
                }
                (Err(Error::BadVersion(_) | Error::NoNode(_)), Known::Present { .. })
                | (Err(Error::NodeExists(_)), Known::Missing) => {
                    self.forget();
                    return Ok(Some(Written::Conflict));
                }
                (Err(Error::NoNode(_)), Known::Missing) if !made_parents => {
                    // Curator creates the counter's parents as containers (EnsurePathContainers).
                    made_parents = true;
                    self.client
                        .ensure_path(path::parent(&self.path), Parents::Containers)
                        .await?;
                    continue;
                }
                (Err(e), _) if e.is_throttled() => {
                    // Refused unprocessed by a loaded server: certainly not applied.
                    self.backoff(&mut resends, start, e).await?;
                    continue;
                }
                // Refused (NoAuth, ...): not applied.
                (Err(e), _) if e.is_refusal() => return Err(e),
                (Err(e), _) => Error::ConnectionLoss(e.detail().clone()),
            };
            match self.resolve(base, &data, &err).await {
                Resolution::Superseded => return Ok(Some(Written::Conflict)),
                Resolution::Unknown(why) => return Err(Error::OutcomeUnknown(why.into())),
                Resolution::Unchanged => {
                    // Certainly not applied: resend under the client's retry policy.
                    let err = self.not_applied(&err);
                    self.backoff(&mut resends, start, err).await?;
                }
            }
        }
    }

    /// Writes `value` whatever the node holds (Curator's `forceSet`, `SharedCount.setCount`,
    /// `SharedValue.setValue`): `setData` without a version, or, with `create`, a `create`
    /// (parents as containers) when the node is missing (else `NoNode`). `before`: the node as
    /// last known, if known. Returns the node's stat with our bytes.
    ///
    /// Unlike Curator's, a write whose reply was lost is never resent blindly: if the first
    /// send was applied, a resend overwrites every write that landed after it (another client's
    /// increment, acknowledged to it, lost). After a lost reply we `sync` and re-read, as for a
    /// conditional write: our bytes on the node → done (ours, or the same bytes written since:
    /// the node holds the value either way); the node still as `before` (same version and
    /// `czxid`, or still missing after a `create`), or one other write further → certainly not
    /// applied, resent; anything else → `OutcomeUnknown` (ours may have been applied and
    /// overwritten since). `before` unknown: the node is read first.
    pub(crate) async fn force_write(
        &self,
        value: C::Value,
        before: Option<Known<()>>,
        create: bool,
    ) -> Result<Stat> {
        let data = self.codec.encode(&value);
        let start = Instant::now();
        let mut resends = 0u32;
        let mut made_parents = false;
        // Where the node is before we write: what a lost reply is judged against (read now if
        // nothing is known; a read is safe to repeat).
        let mut before = match before {
            Some(b) => b,
            None => self.place().await?,
        };
        // Whether the next send is a create (the node was missing last we looked).
        let mut creating = create && before == Known::Missing;
        // Creates and sets that met a node deleted or made meanwhile.
        let mut flips = 0u32;
        let stat = loop {
            let Some(s) = self.write_session(&mut resends, start).await? else {
                continue;
            };
            let sent = if creating {
                s.create(&self.path, &data, CreateMode::Persistent)
                    .await
                    .map(|c| c.stat)
            } else {
                s.set_data(&self.path, &data, None).await
            };
            drop(s);
            let err = match sent {
                Ok(stat) => break stat,
                Err(e @ Error::NoNode(_)) if create && !creating => {
                    // Deleted meanwhile: create it.
                    self.pause_after_flip(&mut flips, &mut resends, start, e)
                        .await?;
                    creating = true;
                    before = Known::Missing;
                    continue;
                }
                Err(Error::NoNode(_)) if creating && !made_parents => {
                    made_parents = true;
                    self.client
                        .ensure_path(path::parent(&self.path), Parents::Containers)
                        .await?;
                    continue;
                }
                Err(e @ Error::NodeExists(_)) if creating => {
                    // Made by someone else meanwhile: set it.
                    self.pause_after_flip(&mut flips, &mut resends, start, e)
                        .await?;
                    creating = false;
                    before = self.place().await?;
                    continue;
                }
                Err(e) if e.is_throttled() => {
                    self.backoff(&mut resends, start, e).await?;
                    continue;
                }
                Err(e) if e.is_refusal() => return Err(e),
                Err(e) => e,
            };
            match self.resolve_forced(&before, creating, &data, &err).await? {
                Forced::Ours(stat) => break stat,
                Forced::MadeByAnother(stat) => {
                    // Our create was not applied: someone else's was (version 0, other bytes).
                    creating = false;
                    before = place_of(&stat);
                }
                Forced::NotApplied => {
                    let err = self.not_applied(&err);
                    self.backoff(&mut resends, start, err).await?;
                }
            }
        };
        self.remember(Known::Present {
            version: stat.version,
            czxid: stat.czxid,
            value,
        });
        Ok(stat)
    }

    /// Before the next send after a create met a node made, or a set met it deleted,
    /// meanwhile: a pause under the retry policy from the second such meeting on (a node made
    /// and deleted again and again must not spin us; `met` says what happened).
    async fn pause_after_flip(
        &self,
        flips: &mut u32,
        resends: &mut u32,
        start: Instant,
        met: Error,
    ) -> Result<()> {
        *flips += 1;
        if *flips > 1 {
            self.backoff(resends, start, met).await?;
        }
        Ok(())
    }

    /// Where the node is now (its version and `czxid`, or missing), whatever its bytes.
    async fn place(&self) -> Result<Known<()>> {
        self.check_open()?;
        let path = self.path.as_str();
        let stat = self
            .client
            .retry(|s| async move { s.exists(path).await.map_err(read_error) })
            .await?;
        Ok(stat.as_ref().map_or(Known::Missing, place_of))
    }

    /// After a lost reply of [`force_write`](Self::force_write)'s send (a `create` if
    /// `created`): what the node says of it, or `OutcomeUnknown`.
    async fn resolve_forced(
        &self,
        before: &Known<()>,
        created: bool,
        data: &[u8],
        cause: &Error,
    ) -> Result<Forced> {
        let unknown = |why: String| {
            Error::OutcomeUnknown(
                format!(
                    "the write of {} to {} may or may not have been applied: {why}; not resent, \
                     as a resend would overwrite any write that landed after it",
                    fmt_bytes(data),
                    self.path
                )
                .into(),
            )
        };
        if self.client.is_closed() {
            return Err(unknown(format!(
                "the client was closed while it was in flight ({cause})"
            )));
        }
        let got = self.read_after_sync().await.map_err(|e| {
            unknown(format!(
                "its reply was lost ({cause}) and the node could not be read again ({e})"
            ))
        })?;
        match self.interpret(got.clone()) {
            Ok(k) => self.remember(k),
            Err(_) => self.forget(),
        }
        match (got, before) {
            (Some((d, stat)), _) if d == data => Ok(Forced::Ours(stat)),
            (None, _) if created => Ok(Forced::NotApplied),
            (Some((_, stat)), _) if created && stat.version == 0 => Ok(Forced::MadeByAnother(stat)),
            // Unchanged, or exactly one other write since (ours would have been a later version
            // or left our bytes): not applied; a resend is ordered after that write.
            (Some((_, stat)), Known::Present { version, czxid, .. })
                if !created
                    && stat.czxid == *czxid
                    && (stat.version == *version || is_next_version(*version, stat.version)) =>
            {
                Ok(Forced::NotApplied)
            }
            (None, _) => Err(unknown(format!(
                "its reply was lost ({cause}) and the node is gone"
            ))),
            (Some((_, stat)), _) => Err(unknown(format!(
                "its reply was lost ({cause}) and the node moved on to version {} with other data",
                stat.version
            ))),
        }
    }

    /// The error of a write certainly not applied after `lost` (what the retry policy gives up
    /// with).
    fn not_applied(&self, lost: &Error) -> Error {
        Error::ConnectionLoss(
            format!(
                "{} (the write to {} was not applied)",
                lost.message(),
                self.path
            )
            .into(),
        )
    }

    /// A session to send a write on. Waiting for a connection sends nothing, so an error there is
    /// certain: a retryable one is paused over under the retry policy (`None`: try again).
    async fn write_session(&self, resends: &mut u32, start: Instant) -> Result<Option<Session>> {
        self.check_open()?;
        match self.client.session().await {
            Ok(s) => Ok(Some(s)),
            Err(e) if e.is_retryable() => {
                self.backoff(resends, start, e).await?;
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Sleeps before the next try as the client's retry policy says, or returns `err` (which
    /// must describe a write that was certainly not applied) when the policy gives up.
    async fn backoff(&self, retries: &mut u32, start: Instant, err: Error) -> Result<()> {
        match self
            .client
            .retry_policy()
            .next_sleep(*retries, start.elapsed())
        {
            Some(sleep) => {
                *retries += 1;
                tokio::select! {
                    _ = tokio::time::sleep(sleep) => Ok(()),
                    _ = self.client.closed() => Err(Error::Closed(format!("{}: the client was closed", self.what()).into())),
                }
            }
            None => Err(err),
        }
    }

    /// `sync`, then the node (data and stat; `None` if missing), pipelined on one session: what
    /// it shows is final for a write whose reply was lost (see the module notes).
    async fn read_after_sync(&self) -> Result<Option<(Vec<u8>, Stat)>> {
        let path = self.path.as_str();
        self.client
            .retry(|s| async move {
                // Both requests are sent now, in this order; the session executes them in order.
                let synced = s.sync(path);
                let read = s.get_data(path);
                let (synced, read) = tokio::join!(synced, read);
                synced.map_err(read_error)?;
                read.or_none().map_err(read_error)
            })
            .await
    }

    /// After a lost reply: sync, re-read, and decide (see the module notes).
    async fn resolve(&self, base: &Known<C::Value>, data: &[u8], cause: &Error) -> Resolution {
        let unknown = |why: String| {
            Resolution::Unknown(format!(
                "the write of {} to {} may or may not have been applied: {why}",
                fmt_bytes(data),
                self.path
            ))
        };
        if self.client.is_closed() {
            return unknown(format!(
                "the client was closed while it was in flight ({cause})"
            ));
        }
        let got = match self.read_after_sync().await {
            Ok(got) => got,
            Err(e) => {
                return unknown(format!(
                    "its reply was lost ({cause}) and the node could not be read again ({e})"
                ))
            }
        };
        let now = got.as_ref().map(|(d, s)| (d.clone(), *s));
        // Keep the cache true to what we just saw, whatever we conclude.
        match self.interpret(got) {
            Ok(k) => self.remember(k),
            Err(_) => self.forget(),
        }
        match (base, now) {
            (Known::Present { .. }, None) => unknown(format!("its reply was lost ({cause}) and the node is gone")),
            (Known::Present { version, czxid, .. }, Some((d, s))) => {
                if s.czxid != *czxid {
                    unknown(format!("its reply was lost ({cause}) and the node was recreated"))
                } else if s.version == *version {
                    Resolution::Unchanged
                } else if s.version == version.wrapping_add(1) && d != data {
                    Resolution::Superseded
                } else if s.version == version.wrapping_add(1) {
                    unknown(format!(
                        "its reply was lost ({cause}); the node now holds exactly these bytes at the next version, \
                         which another writer starting from the same value would also have produced"
                    ))
                } else {
                    unknown(format!(
                        "its reply was lost ({cause}); the node moved on from version {version} to {} meanwhile",
                        s.version
                    ))
                }
            },
            (Known::Missing, None) => Resolution::Unchanged,
            (Known::Missing, Some((d, s))) if s.version == 0 && d != data => Resolution::Superseded,
            (Known::Missing, Some(_)) => unknown(format!(
                "its reply was lost ({cause}); the node exists now and may have been created by this write"
            )),
        }
    }
}

/// A counter must not be a node ZooKeeper deletes by itself. An ephemeral node (a lock or latch
/// node) dies with its session; an empty node that has or had children is a directory — likely
/// a lock's or latch's container, which ZooKeeper deletes once it is empty (servers report a
/// container's ephemeralOwner as 0 to clients, so its history of children and its empty data
/// are what give it away: the recipes make their directories without data). Counting there
/// would silently lose the count, and a value kept there would be lost just the same (`noun`:
/// "counter", "value"). A node with data and children is a counter or value with something
/// below it (Curator's layouts allow a promoted lock under its counter, or counters nested in
/// one another): accepted, as Curator accepts it.
pub(crate) fn check_value_node(noun: &str, path: &str, stat: &Stat, data: &[u8]) -> Result<()> {
    let what = if stat.ephemeral_owner != 0 {
        format!(
            "an ephemeral node of session {:#x} (a lock or latch node?)",
            stat.ephemeral_owner
        )
    } else if (stat.num_children > 0 || stat.cversion != 0) && data.is_empty() {
        "an empty node that has or had children (a lock or latch directory? those are containers, deleted once empty)"
            .to_string()
    } else {
        return Ok(());
    };
    if noun == "counter" {
        return Err(Error::invalid(format!("counter path {path} is {what}; a counter must be a persistent leaf node, or the count would be lost")));
    }
    Err(Error::invalid(format!("{noun} path {path} is {what}; a {noun} must be a persistent leaf node, or the {noun} would be lost")))
}

fn fmt_bytes(data: &[u8]) -> String {
    let hex: Vec<String> = data.iter().map(|b| format!("{b:02x}")).collect();
    format!("0x{}", hex.join(""))
}

/// Puts `known`, learned at `at`, in `slot` unless what the slot holds was learned later.
pub(crate) fn keep_newer<V>(slot: &mut Option<(Known<V>, Instant)>, known: Known<V>, at: Instant) {
    if slot.as_ref().map_or(true, |(_, held)| *held < at) {
        *slot = Some((known, at));
    }
}

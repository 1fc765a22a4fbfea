//! Picking an instance: Curator's provider strategies (round robin, random, sticky) and its
//! down-instance policy, as plain logic over a list of candidates.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{ServiceInstance, ServiceType};
use crate::{Error, Result};

/// How a provider picks among the usable instances (Curator's `ProviderStrategy`s).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ProviderStrategy {
    /// Each call the next, in id order (Curator's `RoundRobinStrategy`, without its failure
    /// after 2³¹ calls).
    #[default]
    RoundRobin,
    /// A random one each call.
    Random,
    /// The same one while it stays usable; then the next by round robin (Curator's
    /// `StickyStrategy` over round robin).
    Sticky,
}

impl ProviderStrategy {
    /// Every strategy.
    pub const ALL: &'static [ProviderStrategy] = &[
        ProviderStrategy::RoundRobin,
        ProviderStrategy::Random,
        ProviderStrategy::Sticky,
    ];

    /// Its name in every face: `round_robin`, `random`, `sticky`.
    pub const fn name(self) -> &'static str {
        match self {
            ProviderStrategy::RoundRobin => "round_robin",
            ProviderStrategy::Random => "random",
            ProviderStrategy::Sticky => "sticky",
        }
    }

    /// The strategy named `name` (ASCII case-insensitive; `-` for `_` too).
    pub fn from_name(name: &str) -> Result<ProviderStrategy> {
        let n = name.replace('-', "_");
        ProviderStrategy::ALL
            .iter()
            .copied()
            .find(|s| s.name().eq_ignore_ascii_case(&n))
            .ok_or_else(|| {
                Error::invalid(format!(
                    "{name:?} is not a provider strategy; expected round_robin, random or sticky"
                ))
            })
    }
}

/// Curator's `DownInstancePolicy`: an instance with `error_threshold` errors noted
/// (a provider's `note_error`) is left out for `timeout`
/// from its first noted error. Default: 2 errors, 30 s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DownInstancePolicy {
    /// How long a down instance stays left out.
    pub timeout: Duration,
    /// How many noted errors make an instance down.
    pub error_threshold: u32,
}

impl Default for DownInstancePolicy {
    fn default() -> Self {
        DownInstancePolicy {
            timeout: Duration::from_secs(30),
            error_threshold: 2,
        }
    }
}

/// What tells one registered instance from another, as Curator's `DownInstanceManager`
/// does by instance equality: not the id alone, which DYNAMIC_SEQUENTIAL instances share
/// (every `worker` process registers id `worker`), but the id with the name, address, ports,
/// service type and registration time, which only the same registration has. Unlike
/// Curator's equality it leaves out what an update changes (payload, URI spec, enabled): an
/// instance that is down stays down through an update. The one home of that rule: the
/// down-instance policy, the sticky strategy and the faces' filters (Node's JS filter hands
/// back the instances it accepted) all compare keys.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct InstanceKey {
    name: String,
    id: String,
    address: Option<String>,
    port: Option<i32>,
    ssl_port: Option<i32>,
    registration_time_utc: i64,
    service_type: ServiceType,
}

impl InstanceKey {
    /// The key of `instance`.
    pub fn of(instance: &ServiceInstance) -> InstanceKey {
        InstanceKey {
            name: instance.name.clone(),
            id: instance.id.clone(),
            address: instance.address.clone(),
            port: instance.port,
            ssl_port: instance.ssl_port,
            registration_time_utc: instance.registration_time_utc,
            service_type: instance.service_type,
        }
    }

    /// Whether `instance` is this registration (as `InstanceKey::of(instance) == *self`,
    /// without the copies).
    pub fn is(&self, instance: &ServiceInstance) -> bool {
        self.registration_time_utc == instance.registration_time_utc
            && self.id == instance.id
            && self.port == instance.port
            && self.ssl_port == instance.ssl_port
            && self.address == instance.address
            && self.name == instance.name
            && self.service_type == instance.service_type
    }
}

/// What errors were noted against.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Noted {
    /// One instance ([`Picker::note_error`]).
    Instance(InstanceKey),
    /// Every instance with this id ([`Picker::note_error_id`]: the C face's
    /// `zkr_service_provider_note_error`, which is given an id).
    Id(String),
}

impl Noted {
    fn is(&self, i: &ServiceInstance) -> bool {
        match self {
            Noted::Instance(key) => key.is(i),
            Noted::Id(id) => *id == i.id,
        }
    }
}

/// The picking state of one provider.
#[derive(Debug)]
pub(crate) struct Picker {
    strategy: ProviderStrategy,
    policy: DownInstancePolicy,
    next: AtomicU64,
    sticky: Mutex<Option<InstanceKey>>,
    /// Noted errors: against what, when the first was noted, and how many. Few (only those
    /// noted within the policy's timeout), so looked through in turn.
    errors: Mutex<Vec<(Noted, Instant, u32)>>,
}

impl Picker {
    pub(crate) fn strategy(&self) -> ProviderStrategy {
        self.strategy
    }

    pub(crate) fn new(strategy: ProviderStrategy, policy: DownInstancePolicy) -> Picker {
        Picker {
            strategy,
            policy,
            next: AtomicU64::new(0),
            sticky: Mutex::new(None),
            errors: Mutex::new(Vec::new()),
        }
    }

    /// Notes an error with `instance` (that registration only).
    pub(crate) fn note_error(&self, instance: &ServiceInstance) {
        self.note(Noted::Instance(InstanceKey::of(instance)))
    }

    /// Notes an error with every instance whose id is `id`.
    pub(crate) fn note_error_id(&self, id: &str) {
        self.note(Noted::Id(id.to_string()))
    }

    fn note(&self, noted: Noted) {
        let mut errors = self.errors.lock().unwrap_or_else(|e| e.into_inner());
        Self::purge(&mut errors, self.policy.timeout);
        match errors.iter_mut().find(|(n, ..)| *n == noted) {
            Some((_, _, count)) => *count += 1,
            None => errors.push((noted, Instant::now(), 1)),
        }
    }

    fn purge(errors: &mut Vec<(Noted, Instant, u32)>, timeout: Duration) {
        errors.retain(|(_, since, _)| since.elapsed() < timeout);
    }

    /// The usable instances of `all` (enabled, not down, passing `filter`), in id order.
    pub(crate) fn usable(
        &self,
        all: impl IntoIterator<Item = Arc<ServiceInstance>>,
        filter: Option<&(dyn Fn(&ServiceInstance) -> bool + Send + Sync)>,
    ) -> Vec<Arc<ServiceInstance>> {
        let candidates: Vec<_> = {
            let mut errors = self.errors.lock().unwrap_or_else(|e| e.into_inner());
            Self::purge(&mut errors, self.policy.timeout);
            all.into_iter()
                .filter(|i| i.enabled)
                .filter(|i| {
                    !errors
                        .iter()
                        .any(|(noted, _, n)| *n >= self.policy.error_threshold && noted.is(i))
                })
                .collect()
        };
        // The user's filter runs with no lock of ours held: it may take its time, wait for its
        // language's lock (Python's GIL, which another caller may hold while it waits for
        // ours), or call note_error itself.
        let mut usable: Vec<_> = candidates
            .into_iter()
            .filter(|i| filter.map_or(true, |f| f(i)))
            .collect();
        usable.sort_by(|a, b| a.id.cmp(&b.id));
        usable
    }

    /// Picks one of `usable` (from [`usable`](Self::usable)) by the strategy.
    pub(crate) fn pick(&self, usable: &[Arc<ServiceInstance>]) -> Option<Arc<ServiceInstance>> {
        if usable.is_empty() {
            return None;
        }
        let round_robin = || {
            let n = self.next.fetch_add(1, Ordering::Relaxed);
            usable[(n % usable.len() as u64) as usize].clone()
        };
        Some(match self.strategy {
            ProviderStrategy::RoundRobin => round_robin(),
            ProviderStrategy::Random => usable[fastrand::usize(..usable.len())].clone(),
            ProviderStrategy::Sticky => {
                let mut sticky = self.sticky.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(kept) = sticky
                    .as_ref()
                    .and_then(|kept| usable.iter().find(|i| kept.is(i)))
                {
                    return Some(kept.clone());
                }
                let chosen = round_robin();
                *sticky = Some(InstanceKey::of(&chosen));
                chosen
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instances(ids: &[&str]) -> Vec<Arc<ServiceInstance>> {
        ids.iter()
            .map(|id| {
                let mut i = ServiceInstance::new("svc");
                i.id = id.to_string();
                Arc::new(i)
            })
            .collect()
    }

    #[test]
    fn round_robin_goes_around_in_id_order_and_does_not_overflow() {
        let p = Picker::new(ProviderStrategy::RoundRobin, DownInstancePolicy::default());
        let usable = p.usable(instances(&["c", "a", "b"]), None);
        let picked: Vec<_> = (0..4)
            .map(|_| p.pick(&usable).unwrap().id.clone())
            .collect();
        assert_eq!(picked, ["a", "b", "c", "a"]);
        p.next.store(u64::from(u32::MAX) * 2, Ordering::Relaxed);
        assert!(p.pick(&usable).is_some(), "past 2^31 calls");
        assert!(p.pick(&[]).is_none());
    }

    #[test]
    fn sticky_keeps_its_instance_while_usable_and_disabled_or_down_ones_are_never_picked() {
        let p = Picker::new(ProviderStrategy::Sticky, DownInstancePolicy::default());
        let all = instances(&["a", "b", "c"]);
        let first = p.pick(&p.usable(all.clone(), None)).unwrap();
        for _ in 0..5 {
            assert_eq!(p.pick(&p.usable(all.clone(), None)).unwrap().id, first.id);
        }
        p.note_error(&first);
        assert_eq!(
            p.pick(&p.usable(all.clone(), None)).unwrap().id,
            first.id,
            "one error: not down"
        );
        p.note_error(&first);
        let usable = p.usable(all.clone(), None);
        assert!(usable.iter().all(|i| i.id != first.id), "two errors: down");
        assert_ne!(p.pick(&usable).unwrap().id, first.id);
        let mut disabled = (*all[1]).clone();
        disabled.enabled = false;
        let usable = p.usable(vec![Arc::new(disabled)], None);
        assert!(usable.is_empty());
        let only_c = |i: &ServiceInstance| i.id == "c";
        assert_eq!(p.usable(all, Some(&only_c)).len(), 1);
    }

    #[test]
    fn down_instances_come_back_after_the_timeout() {
        let p = Picker::new(
            ProviderStrategy::Random,
            DownInstancePolicy {
                timeout: Duration::ZERO,
                error_threshold: 1,
            },
        );
        p.note_error_id("a");
        assert_eq!(p.usable(instances(&["a"]), None).len(), 1);
        assert_eq!(
            ProviderStrategy::from_name("Round-Robin").unwrap(),
            ProviderStrategy::RoundRobin
        );
        assert!(ProviderStrategy::from_name("fastest").is_err());
    }

    /// Review-discovery #6: DYNAMIC_SEQUENTIAL instances share their id (every `worker`
    /// process registers `worker`); errors noted with one of them leave only that one out,
    /// and a sticky provider keeps to that one registration. Errors noted by id (the C face)
    /// still leave out every instance with the id.
    #[test]
    fn instances_that_share_an_id_go_down_one_at_a_time() {
        let p = Picker::new(ProviderStrategy::Sticky, DownInstancePolicy::default());
        let all: Vec<_> = ["10.0.0.1", "10.0.0.2"]
            .iter()
            .map(|address| {
                let mut i = ServiceInstance::new("svc");
                i.id = "q".to_string();
                i.address = Some(address.to_string());
                i.port = Some(8080);
                i.service_type = ServiceType::DynamicSequential;
                Arc::new(i)
            })
            .collect();
        let first = p.pick(&p.usable(all.clone(), None)).unwrap();
        let other = all.iter().find(|i| i.address != first.address).unwrap();
        // An update (another payload) is the same registration.
        let mut updated = (*first).clone();
        updated.payload = Some(serde_json::json!({"load": 3}));
        p.note_error(&first);
        p.note_error(&updated);
        let usable = p.usable(all.clone(), None);
        let addresses: Vec<_> = usable.iter().map(|i| i.address.as_deref()).collect();
        assert_eq!(
            addresses,
            [other.address.as_deref()],
            "only the instance the errors were noted with is down"
        );
        assert_eq!(p.pick(&usable).unwrap().address, other.address);
        for _ in 0..5 {
            assert_eq!(
                p.pick(&p.usable(all.clone(), None)).unwrap().address,
                other.address,
                "sticky keeps to one registration"
            );
        }
        p.note_error_id("q");
        p.note_error_id("q");
        assert!(
            p.usable(all, None).is_empty(),
            "by id: every instance with it"
        );
    }
}

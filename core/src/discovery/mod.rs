//! Service discovery: Curator's curator-x-discovery on the wire (the same nodes and JSON), so
//! that services in every runtime register and find each other with Java services using
//! Curator's `ServiceDiscovery`.
//!
//! Layout: `basePath/serviceName/instanceId`, parents as containers; an instance's node holds
//! its JSON ([`ServiceInstance::to_json`], byte for byte as Curator's `JsonInstanceSerializer`).

mod cache;
#[allow(clippy::module_inception)]
mod discovery;
mod instance;
mod strategy;
mod uri_spec;

pub use self::cache::{ServiceCache, ServiceCacheEvent, ServiceCacheEventKind, ServiceProvider};
pub use self::discovery::{Registration, ServiceDiscovery};
pub use self::instance::{ServiceInstance, ServiceType};
pub use self::strategy::{DownInstancePolicy, InstanceKey, ProviderStrategy};
pub use self::uri_spec::{UriPart, UriSpec};

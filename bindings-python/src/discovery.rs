//! Service discovery (Curator's curator-x-discovery): the core's `ServiceInstance` as
//! `ServiceInstanceData` (the hand-written `zkrecipes.ServiceInstance` dataclass keeps one for
//! an exact round trip), `UriSpec`, `ServiceDiscovery`, `Registration`, `ServiceCache` and
//! `ServiceProvider`. Payloads are any JSON value, converted here between Python objects and
//! `serde_json` values (no text in between).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};
use zkrecipes::discovery::{
    DownInstancePolicy, ProviderStrategy, Registration, ServiceCache, ServiceCacheEvent,
    ServiceDiscovery, ServiceInstance, ServiceProvider, ServiceType, UriSpec,
};

use crate::args::{duration, Int, Text, Timeout};
use crate::bridge::{self, Call};
use crate::client::PyClient;
use crate::errors::{self, IntoPyResult};
use crate::local::Local;

/// How deep a payload may nest (serde_json's own limit when it parses text).
const MAX_DEPTH: usize = 128;

/// A Python object as a JSON value; `at` names where it is (`payload["a"][0]`). A type JSON has
/// no value for is a `TypeError`; a value JSON cannot hold (a NaN, an int beyond 64 bits, too
/// deep) is `InvalidArgumentError`.
fn json_of(obj: &Bound<'_, PyAny>, at: &str, depth: usize) -> PyResult<Value> {
    let py = obj.py();
    if depth > MAX_DEPTH {
        return Err(errors::invalid(
            py,
            format!("{at} nests deeper than {MAX_DEPTH} levels (or refers to itself)"),
        ));
    }
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Value::from(i));
        }
        if let Ok(u) = obj.extract::<u64>() {
            return Ok(Value::from(u));
        }
        return Err(errors::invalid(
            py,
            format!("{at} is {obj}: JSON numbers here fit 64 bits"),
        ));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        let v = f.value();
        return Number::from_f64(v).map(Value::Number).ok_or_else(|| {
            errors::invalid(py, format!("{at} is {v}: JSON has no NaN or infinity"))
        });
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return match s.to_cow() {
            Ok(s) => Ok(Value::String(s.into_owned())),
            Err(_) => Err(errors::invalid(
                py,
                format!("{at} is not valid Unicode text (it has a lone surrogate)"),
            )),
        };
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut m = Map::new();
        for (k, v) in d.iter() {
            let key = k.cast::<PyString>().map_err(|_| {
                PyTypeError::new_err(format!(
                    "{at} has a key {k} of type {}: JSON object keys are str",
                    type_name(&k)
                ))
            })?;
            let key = key.to_cow().map(|s| s.into_owned()).map_err(|_| {
                errors::invalid(py, format!("{at} has a key with a lone surrogate"))
            })?;
            let v = json_of(&v, &format!("{at}[{key:?}]"), depth + 1)?;
            m.insert(key, v);
        }
        return Ok(Value::Object(m));
    }
    let items = if let Ok(l) = obj.cast::<PyList>() {
        l.iter().collect::<Vec<_>>()
    } else if let Ok(t) = obj.cast::<PyTuple>() {
        t.iter().collect::<Vec<_>>()
    } else {
        return Err(PyTypeError::new_err(format!(
            "{at} must be a JSON value (dict, list, tuple, str, int, float, bool or None), not {}",
            type_name(obj)
        )));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, v)| json_of(v, &format!("{at}[{i}]"), depth + 1))
        .collect::<PyResult<Vec<_>>>()
        .map(Value::Array)
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// A JSON value as a Python object (objects as dicts in their order, numbers as int or float).
fn py_of<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.into_pyobject(py)?.into_any(),
            (None, Some(u)) => u.into_pyobject(py)?.into_any(),
            _ => PyFloat::new(py, n.as_f64().unwrap_or(f64::NAN)).into_any(),
        },
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(a) => {
            let items = a
                .iter()
                .map(|v| py_of(py, v))
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)?.into_any()
        }
        Value::Object(m) => {
            let d = PyDict::new(py);
            for (k, v) in m {
                d.set_item(k, py_of(py, v)?)?;
            }
            d.into_any()
        }
    })
}

/// A dict of str → str (a URI spec's variables), each checked as [`Text`].
fn variables(vars: Option<&Bound<'_, PyDict>>) -> PyResult<HashMap<String, String>> {
    let mut out = HashMap::new();
    if let Some(d) = vars {
        for (k, v) in d.iter() {
            let key: Text = k
                .extract()
                .map_err(|e| prefixed(k.py(), "variables key", e))?;
            let value: Text = v
                .extract()
                .map_err(|e| prefixed(v.py(), &format!("variables[{:?}]", &*key), e))?;
            out.insert(key.0, value.0);
        }
    }
    Ok(out)
}

/// `err` with `what` in front of its message, same class.
fn prefixed(py: Python<'_>, what: &str, err: PyErr) -> PyErr {
    let message = err
        .value(py)
        .str()
        .map(|s| s.to_string())
        .unwrap_or_default();
    if err.is_instance_of::<PyTypeError>(py) {
        PyTypeError::new_err(format!("{what} {message}"))
    } else {
        errors::invalid(py, format!("{what} {message}"))
    }
}

/// A core error about one parameter, its name in front.
fn about(py: Python<'_>, what: &str, err: zkrecipes::Error) -> PyErr {
    errors::invalid(py, format!("{what}: {}", err.message()))
}

/// One service instance as the core holds it (Curator's `ServiceInstance`), immutable. The
/// `zkrecipes.ServiceInstance` dataclass is made from it and back; unknown JSON fields and the
/// text of an unchanged payload stay with it, so a node read and written back keeps its bytes.
#[pyclass(frozen, module = "zkrecipes._native", name = "ServiceInstanceData")]
#[derive(Clone)]
pub struct PyInstanceData {
    inner: ServiceInstance,
}

impl From<ServiceInstance> for PyInstanceData {
    fn from(inner: ServiceInstance) -> Self {
        PyInstanceData { inner }
    }
}

impl From<&Arc<ServiceInstance>> for PyInstanceData {
    fn from(i: &Arc<ServiceInstance>) -> Self {
        PyInstanceData {
            inner: (**i).clone(),
        }
    }
}

#[pymethods]
impl PyInstanceData {
    /// Every field (`None`: a random UUID id, now as the registration time, DYNAMIC); `base`:
    /// the instance these fields replace (its unknown fields and payload text are kept). Not
    /// validated: see [`validate`](Self::validate).
    #[new]
    #[pyo3(signature = (name, id = None, address = None, port = None, ssl_port = None, payload = None, payload_class = None, service_type = None, uri_spec = None, enabled = true, registration_time_utc = None, base = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        name: Text,
        id: Option<Text>,
        address: Option<Text>,
        port: Option<Int<i32>>,
        ssl_port: Option<Int<i32>>,
        payload: Option<Bound<'_, PyAny>>,
        payload_class: Option<Text>,
        service_type: Option<Text>,
        uri_spec: Option<Text>,
        enabled: bool,
        registration_time_utc: Option<Int<i64>>,
        base: Option<PyRef<'_, PyInstanceData>>,
    ) -> PyResult<Self> {
        let mut i = match base {
            Some(b) => b.inner.clone(),
            None => ServiceInstance::new(String::new()),
        };
        i.name = name.0;
        if let Some(id) = id {
            i.id = id.0;
        }
        i.address = address.map(String::from);
        i.port = port.map(|p| p.0);
        i.ssl_port = ssl_port.map(|p| p.0);
        i.payload = match payload {
            None => None,
            Some(p) if p.is_none() => None,
            Some(p) => Some(json_of(&p, "payload", 0)?),
        };
        i.payload_class = payload_class.map(String::from);
        i.service_type = match service_type {
            None => ServiceType::Dynamic,
            Some(t) => ServiceType::from_name(&t).map_err(|e| about(py, "service_type", e))?,
        };
        i.uri_spec = uri_spec
            .map(|t| UriSpec::new(&t))
            .transpose()
            .map_err(|e| about(py, "uri_spec", e))?;
        i.enabled = enabled;
        if let Some(t) = registration_time_utc {
            i.registration_time_utc = t.0;
        }
        Ok(PyInstanceData { inner: i })
    }

    /// Checks what registering needs (name and id node names, ports in range, a payload
    /// class that reads back).
    fn validate(&self, py: Python<'_>) -> PyResult<()> {
        self.inner.validate().py_err(py)
    }

    /// The node's bytes (Curator's JSON; `enabled` written only when not `compatible`).
    fn to_json<'py>(&self, py: Python<'py>, compatible: bool) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.inner.to_json(compatible))
    }

    /// Reads a node's bytes (`CorruptedDataError` saying what is wrong).
    #[staticmethod]
    fn from_json(py: Python<'_>, data: Vec<u8>) -> PyResult<Self> {
        ServiceInstance::from_json(&data).py_err(py).map(Into::into)
    }

    /// Renders the instance's URI spec (`""` without one).
    #[pyo3(signature = (variables = None))]
    fn build_uri(&self, variables: Option<&Bound<'_, PyDict>>) -> PyResult<String> {
        Ok(self.inner.build_uri(&self::variables(variables)?))
    }

    #[getter]
    fn name(&self) -> &str {
        &self.inner.name
    }

    #[getter]
    fn id(&self) -> &str {
        &self.inner.id
    }

    #[getter]
    fn address(&self) -> Option<&str> {
        self.inner.address.as_deref()
    }

    #[getter]
    fn port(&self) -> Option<i32> {
        self.inner.port
    }

    #[getter]
    fn ssl_port(&self) -> Option<i32> {
        self.inner.ssl_port
    }

    /// The payload as a new Python object (dicts, lists, str, int, float, bool, None).
    #[getter]
    fn payload<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match &self.inner.payload {
            None => Ok(py.None().into_bound(py)),
            Some(v) => py_of(py, v),
        }
    }

    #[getter]
    fn payload_class(&self) -> Option<&str> {
        self.inner.payload_class.as_deref()
    }

    #[getter]
    fn service_type(&self) -> &'static str {
        self.inner.service_type.name()
    }

    /// The URI spec's template, or None.
    #[getter]
    fn uri_spec(&self) -> Option<String> {
        self.inner.uri_spec.as_ref().map(|s| s.to_string())
    }

    #[getter]
    fn enabled(&self) -> bool {
        self.inner.enabled
    }

    #[getter]
    fn registration_time_utc(&self) -> i64 {
        self.inner.registration_time_utc
    }
}

/// Curator's `UriSpec`.
#[pyclass(frozen, module = "zkrecipes._native", name = "UriSpec")]
pub struct PyUriSpec {
    inner: UriSpec,
}

#[pymethods]
impl PyUriSpec {
    #[new]
    fn new(py: Python<'_>, template: Text) -> PyResult<Self> {
        UriSpec::new(&template)
            .map(|inner| PyUriSpec { inner })
            .map_err(|e| about(py, "template", e))
    }

    /// The URI for `instance` (or none) with `variables` on top.
    #[pyo3(signature = (instance = None, variables = None))]
    fn build(
        &self,
        instance: Option<PyRef<'_, PyInstanceData>>,
        variables: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<String> {
        Ok(self.inner.build(
            instance.as_ref().map(|i| &i.inner),
            &self::variables(variables)?,
        ))
    }

    fn __str__(&self) -> String {
        self.inner.to_string()
    }
}

/// The native ServiceDiscovery.
#[pyclass(frozen, module = "zkrecipes._native", name = "ServiceDiscovery")]
pub struct PyServiceDiscovery {
    inner: Local<ServiceDiscovery>,
}

impl PyServiceDiscovery {
    fn d(&self, py: Python<'_>) -> PyResult<ServiceDiscovery> {
        self.inner.get(py, "service discovery").cloned()
    }
}

#[pymethods]
impl PyServiceDiscovery {
    #[new]
    fn new(py: Python<'_>, client: &PyClient, base_path: Text) -> PyResult<Self> {
        let c = client.core(py)?;
        let d = ServiceDiscovery::new(&c, &base_path).py_err(py)?;
        Ok(PyServiceDiscovery {
            inner: Local::new(d),
        })
    }

    #[getter]
    fn base_path(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.d(py)?.base_path().to_string())
    }

    fn register(&self, py: Python<'_>, instance: PyRef<'_, PyInstanceData>) -> PyResult<Call> {
        let d = self.d(py)?;
        let i = instance.inner.clone();
        Ok(Call::value(async move {
            d.register(i).await.map(|r| PyRegistration {
                inner: Local::new(r),
            })
        }))
    }

    fn query_for_names(&self, py: Python<'_>) -> PyResult<Call> {
        let d = self.d(py)?;
        Ok(Call::value(async move { d.query_for_names().await }))
    }

    fn query_for_instances(&self, py: Python<'_>, name: Text) -> PyResult<Call> {
        let d = self.d(py)?;
        Ok(Call::value(async move {
            let found = d.query_for_instances(&name).await?;
            Ok(found
                .into_iter()
                .map(PyInstanceData::from)
                .collect::<Vec<_>>())
        }))
    }

    fn query_for_instance(&self, py: Python<'_>, name: Text, id: Text) -> PyResult<Call> {
        let d = self.d(py)?;
        Ok(Call::value(async move {
            Ok(d.query_for_instance(&name, &id)
                .await?
                .map(PyInstanceData::from))
        }))
    }

    fn close(&self, py: Python<'_>) -> PyResult<Call> {
        let d = self.d(py)?;
        Ok(Call::unit(async move { d.close().await }))
    }
}

/// The native Registration.
#[pyclass(frozen, module = "zkrecipes._native", name = "Registration")]
pub struct PyRegistration {
    inner: Local<Registration>,
}

impl PyRegistration {
    fn r(&self, py: Python<'_>) -> PyResult<Registration> {
        self.inner.get(py, "registration").cloned()
    }
}

#[pymethods]
impl PyRegistration {
    #[getter]
    fn instance(&self, py: Python<'_>) -> PyResult<PyInstanceData> {
        Ok(self.r(py)?.instance().into())
    }

    #[getter]
    fn path(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.r(py)?.path())
    }

    #[getter]
    fn registered(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.r(py)?.is_registered())
    }

    fn update(&self, py: Python<'_>, instance: PyRef<'_, PyInstanceData>) -> PyResult<()> {
        self.r(py)?.update(instance.inner.clone()).py_err(py)
    }

    fn set_enabled(&self, py: Python<'_>, enabled: bool) -> PyResult<()> {
        self.r(py)?.set_enabled(enabled).py_err(py)
    }

    #[pyo3(signature = (timeout = Timeout(None)))]
    fn wait_registered(&self, py: Python<'_>, timeout: Timeout) -> PyResult<Call> {
        let r = self.r(py)?;
        Ok(Call::value(
            async move { r.wait_registered(timeout.0).await },
        ))
    }

    fn unregister(&self, py: Python<'_>) -> PyResult<Call> {
        let r = self.r(py)?;
        Ok(Call::unit(async move { r.unregister().await }))
    }
}

/// `callback(kind, path, instance, old, error, resync)` for one cache event (`error` an
/// exception object or None).
fn deliver(callback: &Py<PyAny>, e: &ServiceCacheEvent) {
    let _ = bridge::attach(|py| {
        let error = e
            .error
            .clone()
            .map(|err| errors::to_py(py, err).into_value(py));
        bridge::invoke(
            callback,
            (
                e.kind.name(),
                e.path.as_str(),
                e.instance.as_ref().map(PyInstanceData::from),
                e.old.as_ref().map(PyInstanceData::from),
                error,
                e.resync,
            ),
        );
    });
}

/// The native ServiceCache.
#[pyclass(frozen, module = "zkrecipes._native", name = "ServiceCache")]
pub struct PyServiceCache {
    inner: Local<Arc<ServiceCache>>,
}

impl PyServiceCache {
    fn c(&self, py: Python<'_>) -> PyResult<Arc<ServiceCache>> {
        self.inner.get(py, "service cache").cloned()
    }
}

#[pymethods]
impl PyServiceCache {
    #[new]
    fn new(py: Python<'_>, discovery: &PyServiceDiscovery, name: Text) -> PyResult<Self> {
        let d = discovery.d(py)?;
        let c = ServiceCache::new(&d, &name).py_err(py)?;
        Ok(PyServiceCache {
            inner: Local::new(Arc::new(c)),
        })
    }

    #[getter]
    fn name(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.c(py)?.name().to_string())
    }

    fn start(&self, py: Python<'_>) -> PyResult<Call> {
        let c = self.c(py)?;
        Ok(Call::unit(async move { c.start().await }))
    }

    #[pyo3(signature = (timeout = Timeout(None)))]
    fn await_initialized(&self, py: Python<'_>, timeout: Timeout) -> PyResult<Call> {
        let c = self.c(py)?;
        Ok(Call::value(
            async move { c.await_initialized(timeout.0).await },
        ))
    }

    #[pyo3(signature = (zxid, timeout = Timeout(None)))]
    fn await_zxid(&self, py: Python<'_>, zxid: Int<i64>, timeout: Timeout) -> PyResult<Call> {
        let c = self.c(py)?;
        Ok(Call::value(
            async move { c.await_zxid(zxid.0, timeout.0).await },
        ))
    }

    fn instances(&self, py: Python<'_>) -> PyResult<Vec<PyInstanceData>> {
        Ok(self.c(py)?.instances().iter().map(Into::into).collect())
    }

    /// `callback(kind, path, instance, old, error, resync)` for each event, on the cache's
    /// dispatcher thread, one at a time, in order; with `replay`, the cached instances first.
    #[pyo3(signature = (callback, replay = false))]
    fn listen(&self, py: Python<'_>, callback: Py<PyAny>, replay: bool) -> PyResult<u64> {
        Ok(self
            .c(py)?
            .listen(replay, move |e: &ServiceCacheEvent| deliver(&callback, e)))
    }

    fn remove_listener(&self, py: Python<'_>, id: u64) -> PyResult<bool> {
        self.c(py)?.remove_listener(id).py_err(py)
    }

    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let c = self.c(py)?;
        py.detach(move || c.close());
        Ok(())
    }
}

thread_local! {
    /// The first exception a provider's filter raised during this thread's current
    /// `get_instance` / `get_all_instances` (the core calls the filter on the caller's thread).
    static FILTER_ERROR: RefCell<Option<PyErr>> = const { RefCell::new(None) };
}

/// The native ServiceProvider.
#[pyclass(frozen, module = "zkrecipes._native", name = "ServiceProvider")]
pub struct PyServiceProvider {
    inner: Local<Arc<ServiceProvider>>,
    closed: AtomicBool,
}

impl PyServiceProvider {
    /// The provider, or `ClosedError` once closed (its cache no longer follows the service).
    fn p(&self, py: Python<'_>) -> PyResult<Arc<ServiceProvider>> {
        let p = self.inner.get(py, "service provider")?;
        if self.closed.load(Ordering::SeqCst) {
            return Err(errors::closed(
                py,
                format!("the service provider of {:?} is closed", p.cache().name()),
            ));
        }
        Ok(p.clone())
    }

    /// Runs `f` (which may call the filter) and raises what the filter raised first, as it was.
    fn filtered<T>(f: impl FnOnce() -> T) -> PyResult<T> {
        FILTER_ERROR.with(|e| e.borrow_mut().take());
        let out = f();
        match FILTER_ERROR.with(|e| e.borrow_mut().take()) {
            Some(err) => Err(err),
            None => Ok(out),
        }
    }
}

#[pymethods]
impl PyServiceProvider {
    /// `strategy` a core name (round_robin, random, sticky); `filter(instance_data) -> bool`
    /// runs on the calling thread of `get_instance` / `get_all_instances`.
    #[new]
    #[pyo3(signature = (discovery, name, strategy, filter, down_error_threshold, down_timeout))]
    fn new(
        py: Python<'_>,
        discovery: &PyServiceDiscovery,
        name: Text,
        strategy: Text,
        filter: Option<Py<PyAny>>,
        down_error_threshold: Int<u32>,
        down_timeout: f64,
    ) -> PyResult<Self> {
        let d = discovery.d(py)?;
        let strategy =
            ProviderStrategy::from_name(&strategy).map_err(|e| about(py, "strategy", e))?;
        let policy = DownInstancePolicy {
            timeout: duration(py, "down_timeout", down_timeout)?,
            error_threshold: down_error_threshold.0,
        };
        let mut p = ServiceProvider::new(&d, &name, strategy)
            .py_err(py)?
            .with_down_instance_policy(policy);
        if let Some(f) = filter {
            p = p.with_filter(move |i: &ServiceInstance| {
                bridge::attach(|py| {
                    let verdict = f
                        .call1(py, (PyInstanceData::from(i.clone()),))
                        .and_then(|r| r.is_truthy(py));
                    verdict.unwrap_or_else(|e| {
                        FILTER_ERROR.with(|slot| {
                            slot.borrow_mut().get_or_insert(e);
                        });
                        false
                    })
                })
                .unwrap_or(false)
            });
        }
        Ok(PyServiceProvider {
            inner: Local::new(Arc::new(p)),
            closed: AtomicBool::new(false),
        })
    }

    /// Starts the cache and waits for its initial load.
    fn start(&self, py: Python<'_>) -> PyResult<Call> {
        let p = self.p(py)?;
        Ok(Call::unit(async move { p.start().await }))
    }

    fn get_instance(&self, py: Python<'_>) -> PyResult<Option<PyInstanceData>> {
        let p = self.p(py)?;
        Self::filtered(|| p.get_instance().as_ref().map(Into::into))
    }

    fn get_all_instances(&self, py: Python<'_>) -> PyResult<Vec<PyInstanceData>> {
        let p = self.p(py)?;
        Self::filtered(|| {
            p.get_all_instances()
                .iter()
                .map(Into::into)
                .collect::<Vec<_>>()
        })
    }

    fn note_error(&self, py: Python<'_>, instance: PyRef<'_, PyInstanceData>) -> PyResult<()> {
        self.p(py)?.note_error(&instance.inner);
        Ok(())
    }

    /// The service's name.
    #[getter]
    fn name(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self
            .inner
            .get(py, "service provider")?
            .cache()
            .name()
            .to_string())
    }

    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let p = self.inner.get(py, "service provider")?.clone();
        self.closed.store(true, Ordering::SeqCst);
        py.detach(move || p.close());
        Ok(())
    }
}

/// The core's service type names.
pub fn service_types() -> Vec<&'static str> {
    ServiceType::ALL.iter().map(|t| t.name()).collect()
}

/// The core's ServiceCache event kinds.
pub fn cache_event_kinds() -> Vec<&'static str> {
    zkrecipes::discovery::ServiceCacheEventKind::ALL
        .iter()
        .map(|k| k.name())
        .collect()
}

/// The core's provider strategies.
pub fn strategies() -> Vec<&'static str> {
    ProviderStrategy::ALL.iter().map(|s| s.name()).collect()
}

//! Curator's `ServiceInstance` and its JSON, byte for byte as curator-x-discovery's
//! `JsonInstanceSerializer` (Jackson) writes it.
//!
//! Jackson writes the fields in the class's order, nulls included, compactly:
//! `{"name":..,"id":..,"address":..,"port":..,"sslPort":..,"payload":..,
//! "registrationTimeUTC":..,"serviceType":"DYNAMIC","uriSpec":{"parts":[{"value":..,
//! "variable":..}]}}`, and `"enabled":..` last only outside Curator's compatible mode (its
//! default, which older readers need). Strings escape `"`, `\` and control characters (`\n`
//! style where JSON has one, else `\u00XX` in upper-case hex) and a character past U+FFFF as
//! its surrogate pair (`\uD83D\uDE00`); everything else, other non-ASCII included, is written
//! as it is. The payload carries Jackson's type information
//! (`@JsonTypeInfo(use = CLASS)`): `{"@class":"com.x.Details",...}` for objects,
//! `["java.util.ArrayList",[...]]` for lists; it is split off into `payload_class` and written
//! back the same way (a list given without a class is written as a `java.util.ArrayList`, as
//! Jackson writes every List: Java readers take a bare array's first element for a class); a
//! double in a payload is written as Java's `Double.toString` writes it (`2.5E-4`, `1.0E10`,
//! `100.0`). Readers ignore unknown fields and keep them for a round trip; a payload
//! or unknown field that is not changed is written back as the text it was read from (a Java
//! double's `1.0E10` stays `1.0E10`).

use std::fmt::Write as _;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::uri_spec::{UriPart, UriSpec};
use crate::client::CreateMode;
use crate::{Error, Result};

macro_rules! service_types {
    ($( $(#[$doc:meta])* $variant:ident = $name:literal; )*) => {
        /// How an instance is registered (Curator's `ServiceType`).
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        pub enum ServiceType {
            $( $(#[$doc])* $variant, )*
        }

        impl ServiceType {
            /// Every type, in Curator's declaration order.
            pub const ALL: &'static [ServiceType] = &[$(ServiceType::$variant),*];

            /// Curator's name (`DYNAMIC`, ...), as written in the JSON.
            pub const fn name(self) -> &'static str {
                match self { $(ServiceType::$variant => $name,)* }
            }

            /// The type named `name` (ASCII case-insensitive).
            pub fn from_name(name: &str) -> Result<ServiceType> {
                ServiceType::ALL
                    .iter()
                    .copied()
                    .find(|t| t.name().eq_ignore_ascii_case(name))
                    .ok_or_else(|| {
                        Error::invalid(format!(
                            "{name:?} is not a service type; expected one of DYNAMIC, STATIC, PERMANENT, DYNAMIC_SEQUENTIAL"
                        ))
                    })
            }
        }
    };
}

service_types! {
    /// An ephemeral node: gone with the session (and re-registered after a new one).
    #[default]
    Dynamic = "DYNAMIC";
    /// A persistent node, removed by `unregister` and `close`.
    Static = "STATIC";
    /// A persistent node that `close` leaves registered.
    Permanent = "PERMANENT";
    /// An ephemeral sequential node: the id gets ZooKeeper's 10-digit sequence number.
    DynamicSequential = "DYNAMIC_SEQUENTIAL";
}

impl ServiceType {
    /// Whether the registration lives and dies with the session.
    pub fn is_dynamic(self) -> bool {
        matches!(self, ServiceType::Dynamic | ServiceType::DynamicSequential)
    }

    /// The node's create mode (Curator's `internalRegisterService`).
    pub fn create_mode(self) -> CreateMode {
        match self {
            ServiceType::Dynamic => CreateMode::Ephemeral,
            ServiceType::DynamicSequential => CreateMode::EphemeralSequential,
            ServiceType::Static | ServiceType::Permanent => CreateMode::Persistent,
        }
    }
}

/// One instance of a service (Curator's `ServiceInstance`).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ServiceInstance {
    /// The JSON text of the payload and of unknown fields as read, for an exact round trip.
    raw: RawTexts,
    /// The service's name: the node's parent under the base path.
    pub name: String,
    /// The instance's id: the node's name (a random UUID by default; a DYNAMIC_SEQUENTIAL
    /// registration appends ZooKeeper's sequence number).
    pub id: String,
    /// Where it listens.
    pub address: Option<String>,
    /// Its port.
    pub port: Option<i32>,
    /// Its SSL port.
    pub ssl_port: Option<i32>,
    /// Any JSON value, without Jackson's type information (that is `payload_class`).
    pub payload: Option<Value>,
    /// The Java class Jackson records with the payload (`"@class"` inside an object, the first
    /// element of the `[class, value]` wrapper otherwise); `None`: plain JSON.
    pub payload_class: Option<String>,
    /// When it was registered, ms since the epoch (set when the instance is made).
    pub registration_time_utc: i64,
    /// How it is registered.
    pub service_type: ServiceType,
    /// Its URI template.
    pub uri_spec: Option<UriSpec>,
    /// Whether providers may pick it (written only outside Curator's compatible mode; a node
    /// without it is enabled).
    pub enabled: bool,
    /// Fields a newer writer added, kept in order for a round trip.
    pub extra: Map<String, Value>,
}

impl ServiceInstance {
    /// An instance of `name` with a random UUID id, registered now, DYNAMIC, enabled.
    pub fn new(name: impl Into<String>) -> ServiceInstance {
        ServiceInstance {
            name: name.into(),
            id: uuid::Uuid::new_v4().to_string(),
            address: None,
            port: None,
            ssl_port: None,
            payload: None,
            payload_class: None,
            registration_time_utc: now_ms(),
            service_type: ServiceType::Dynamic,
            uri_spec: None,
            enabled: true,
            extra: Map::new(),
            raw: RawTexts::default(),
        }
    }

    /// Whether writing this instance differs from writing its fields alone: it was read from a
    /// node and holds unknown fields, or a payload's text that its value would be written as
    /// otherwise (`2.50`, `1E10`), both written back byte for byte while unchanged. A face whose
    /// instances cross as plain values carries `to_json(false)` along when this is true and
    /// starts its write-back from [`from_json`](Self::from_json) of it, which restores them.
    pub fn holds_read_text(&self) -> bool {
        !self.raw.extra.is_empty()
            || self
                .raw
                .payload
                .as_ref()
                .is_some_and(|(value, class, text)| {
                    *value == self.payload && *class == self.payload_class && {
                        let mut written = String::new();
                        self.write_payload(&mut written);
                        written != *text
                    }
                })
    }

    /// Whether this instance was read from a node's bytes with a payload or unknown fields (so
    /// it holds their text; [`holds_read_text`](Self::holds_read_text) says whether writing
    /// the fields alone would differ).
    pub fn read_from_node(&self) -> bool {
        self.raw.payload.is_some() || !self.raw.extra.is_empty()
    }

    /// What tells this registration from others sharing its id ([`InstanceKey`](super::InstanceKey)).
    pub fn key(&self) -> super::InstanceKey {
        super::InstanceKey::of(self)
    }

    /// Checks what a node name and the JSON need: a name and an id that are node names (not
    /// empty: `base//id` or `base/name/` is no instance's node).
    pub fn validate(&self) -> Result<()> {
        for (what, v) in [("name", &self.name), ("id", &self.id)] {
            if v.is_empty() {
                return Err(Error::invalid(format!(
                    "service instance {what} must not be empty"
                )));
            }
            crate::path::validate_path(&format!("/{v}")).map_err(|e| {
                Error::invalid(format!("service instance {what} {v:?}: {}", e.message()))
            })?;
            if v.contains('/') {
                return Err(Error::invalid(format!(
                    "service instance {what} {v:?} must not contain '/'"
                )));
            }
        }
        if let Some(class) = &self.payload_class {
            // `[class, value]` reads back typed only with a Java class name (see
            // `split_payload`); anything else would come back as plain JSON.
            if !matches!(self.payload, Some(Value::Object(_))) && !is_java_class(class) {
                return Err(Error::invalid(format!(
                    "service instance payload_class {class:?} is not a Java class name (such as java.util.ArrayList)"
                )));
            }
        }
        for (what, p) in [("port", self.port), ("ssl_port", self.ssl_port)] {
            if let Some(p) = p.filter(|p| !(0..=65535).contains(p)) {
                return Err(Error::invalid(format!(
                    "service instance {what} {p} is not a port (0..65535)"
                )));
            }
        }
        Ok(())
    }

    /// Renders the instance's URI spec (`""` without one), Curator's `buildUriSpec`.
    pub fn build_uri(&self, variables: &std::collections::HashMap<String, String>) -> String {
        self.uri_spec
            .as_ref()
            .map(|s| s.build(Some(self), variables))
            .unwrap_or_default()
    }

    /// The node's bytes: Jackson's, with `enabled` only when `compatible` is false.
    pub fn to_json(&self, compatible: bool) -> Vec<u8> {
        let mut o = String::with_capacity(256);
        o.push('{');
        field(&mut o, "name", true);
        string(&mut o, &self.name);
        field(&mut o, "id", false);
        string(&mut o, &self.id);
        field(&mut o, "address", false);
        opt(&mut o, self.address.as_deref(), string);
        field(&mut o, "port", false);
        opt(&mut o, self.port, |o, v| write!(o, "{v}").unwrap_or(()));
        field(&mut o, "sslPort", false);
        opt(&mut o, self.ssl_port, |o, v| write!(o, "{v}").unwrap_or(()));
        field(&mut o, "payload", false);
        match &self.raw.payload {
            Some((payload, class, text))
                if *payload == self.payload && *class == self.payload_class =>
            {
                o.push_str(text)
            }
            _ => self.write_payload(&mut o),
        }
        field(&mut o, "registrationTimeUTC", false);
        let _ = write!(o, "{}", self.registration_time_utc);
        field(&mut o, "serviceType", false);
        string(&mut o, self.service_type.name());
        field(&mut o, "uriSpec", false);
        opt(&mut o, self.uri_spec.as_ref(), |o, spec| {
            o.push_str("{\"parts\":[");
            for (i, p) in spec.parts().iter().enumerate() {
                if i > 0 {
                    o.push(',');
                }
                o.push_str("{\"value\":");
                string(o, &p.value);
                o.push_str(",\"variable\":");
                o.push_str(if p.variable { "true" } else { "false" });
                o.push('}');
            }
            o.push_str("]}");
        });
        if !compatible {
            field(&mut o, "enabled", false);
            o.push_str(if self.enabled { "true" } else { "false" });
        }
        for (k, v) in &self.extra {
            field(&mut o, k, false);
            match self.raw.extra.iter().find(|(rk, rv, _)| rk == k && rv == v) {
                Some((_, _, text)) => o.push_str(text),
                None => value(&mut o, v),
            }
        }
        o.push('}');
        o.into_bytes()
    }

    fn write_payload(&self, o: &mut String) {
        match (&self.payload_class, &self.payload) {
            (None, None) => o.push_str("null"),
            // A list with no class: Jackson reads an array payload as its wrapper `[class,
            // value]` (the first element a type id), so a bare list fails every Java reader of
            // the service. Written as Jackson writes any List, `java.util.ArrayList`.
            (None, Some(v @ Value::Array(_))) => {
                o.push_str("[\"java.util.ArrayList\",");
                value(o, v);
                o.push(']');
            }
            (None, Some(v)) => value(o, v),
            (Some(class), Some(Value::Object(m))) => {
                o.push_str("{\"@class\":");
                string(o, class);
                for (k, v) in m {
                    o.push(',');
                    string(o, k);
                    o.push(':');
                    value(o, v);
                }
                o.push('}');
            }
            (Some(class), v) => {
                o.push('[');
                string(o, class);
                o.push(',');
                match v {
                    Some(v) => value(o, v),
                    None => o.push_str("null"),
                }
                o.push(']');
            }
        }
    }

    /// Reads a node's bytes as Curator's reader does: unknown fields ignored (and kept), a
    /// missing `enabled` true, a missing `serviceType` DYNAMIC. Not JSON, or fields of the wrong
    /// type: `CorruptedData`, naming what is wrong.
    pub fn from_json(bytes: &[u8]) -> Result<ServiceInstance> {
        let bad =
            |why: String| Error::CorruptedData(format!("service instance JSON: {why}").into());
        let fields: Vec<(String, Box<RawValue>)> = match serde_json::from_slice::<Value>(bytes) {
            Err(e) => return Err(bad(e.to_string())),
            Ok(Value::Object(_)) => {
                serde_json::from_slice::<RawObject>(bytes)
                    .map_err(|e| bad(e.to_string()))?
                    .0
            }
            Ok(_) => return Err(bad("not a JSON object".into())),
        };
        let mut m = Map::new();
        let mut texts = Vec::with_capacity(fields.len());
        for (k, raw) in fields {
            let v: Value = serde_json::from_str(raw.get()).map_err(|e| bad(e.to_string()))?;
            texts.push((k.clone(), raw));
            m.insert(k, v);
        }
        let text_of = |k: &str| {
            texts
                .iter()
                .find(|(tk, _)| tk == k)
                .map(|(_, t)| t.get().to_string())
        };
        // Scalars are read as Jackson's default mapper (Curator's) reads them: a number or a
        // boolean where a string goes is its text; a string where a number goes is parsed, and a
        // fraction is truncated (ACCEPT_FLOAT_AS_INT); "true"/"false" (any case) or a number
        // where a boolean goes. A writer other than Jackson (a script, another language's
        // library) may write `"port":"8080"`; Java reads it, and so do we.
        let text = |m: &mut Map<String, Value>, k: &str| -> Result<Option<String>> {
            match m.remove(k) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s)),
                // As written (a number's own text, `1.0E10` included).
                Some(Value::Number(_) | Value::Bool(_)) => Ok(text_of(k)),
                Some(other) => Err(bad(format!("{k} is {other}, not a string"))),
            }
        };
        let int = |m: &mut Map<String, Value>, k: &str| -> Result<Option<i64>> {
            let truncated = |f: f64| {
                // Within i64: `as` saturates, and a float past 2^63 is out of range.
                (f.is_finite() && f.abs() < 9.2e18).then_some(f.trunc() as i64)
            };
            match m.remove(k) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::Number(n)) => n
                    .as_i64()
                    .or_else(|| n.as_f64().and_then(truncated))
                    .map(Some)
                    .ok_or_else(|| bad(format!("{k} is {n}, not an integer"))),
                Some(Value::String(s)) => match s.trim() {
                    // Jackson's empty string: null for a boxed Integer, 0 for a long.
                    "" => Ok(None),
                    t => t
                        .parse::<i64>()
                        .ok()
                        .or_else(|| t.parse::<f64>().ok().and_then(truncated))
                        .map(Some)
                        .ok_or_else(|| bad(format!("{k} is {s:?}, not a number"))),
                },
                Some(other) => Err(bad(format!("{k} is {other}, not a number"))),
            }
        };
        let port = |m: &mut Map<String, Value>, k: &str| -> Result<Option<i32>> {
            int(m, k)?
                .map(|p| i32::try_from(p).map_err(|_| bad(format!("{k} {p} does not fit an int"))))
                .transpose()
        };
        let name = text(&mut m, "name")?.unwrap_or_default();
        let id = text(&mut m, "id")?.unwrap_or_default();
        let address = text(&mut m, "address")?;
        let port_v = port(&mut m, "port")?;
        let ssl_port = port(&mut m, "sslPort")?;
        let payload_text = text_of("payload");
        let (payload, payload_class) = split_payload(m.remove("payload"));
        let registration_time_utc = int(&mut m, "registrationTimeUTC")?.unwrap_or(0);
        let service_type = match text(&mut m, "serviceType")? {
            None => ServiceType::Dynamic,
            Some(t) => ServiceType::from_name(&t).map_err(|e| bad(e.message().to_string()))?,
        };
        let uri_spec = match m.remove("uriSpec") {
            None | Some(Value::Null) => None,
            Some(spec) => Some(uri_spec_from(spec).map_err(bad)?),
        };
        let enabled = match m.remove("enabled") {
            None | Some(Value::Null) => true,
            Some(Value::Bool(b)) => b,
            Some(Value::String(t)) if t.trim().eq_ignore_ascii_case("true") => true,
            Some(Value::String(t)) if t.trim().eq_ignore_ascii_case("false") => false,
            Some(Value::Number(n)) => n.as_f64() != Some(0.0),
            Some(other) => return Err(bad(format!("enabled is {other}, not a boolean"))),
        };
        let raw = RawTexts {
            payload: payload_text.map(|t| (payload.clone(), payload_class.clone(), t)),
            extra: m
                .iter()
                .filter_map(|(k, v)| text_of(k).map(|t| (k.clone(), v.clone(), t)))
                .collect(),
        };
        Ok(ServiceInstance {
            raw,
            name,
            id,
            address,
            port: port_v,
            ssl_port,
            payload,
            payload_class,
            registration_time_utc,
            service_type,
            uri_spec,
            enabled,
            extra: m,
        })
    }
}

/// The text each value of a node was read from (payload, unknown fields), so that what is not
/// changed is written back byte for byte. Never part of an instance's equality.
#[derive(Clone, Debug, Default)]
struct RawTexts {
    payload: Option<(Option<Value>, Option<String>, String)>,
    extra: Vec<(String, Value, String)>,
}

impl PartialEq for RawTexts {
    fn eq(&self, _: &RawTexts) -> bool {
        true
    }
}

/// A JSON object's fields in order, each value as its text.
struct RawObject(Vec<(String, Box<RawValue>)>);

impl<'de> serde::Deserialize<'de> for RawObject {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<RawObject, D::Error> {
        struct Fields;
        impl<'de> serde::de::Visitor<'de> for Fields {
            type Value = RawObject;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<RawObject, A::Error> {
                let mut fields = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, Box<RawValue>>()? {
                    fields.retain(|(fk, _): &(String, Box<RawValue>)| *fk != k);
                    fields.push((k, v));
                }
                Ok(RawObject(fields))
            }
        }
        d.deserialize_map(Fields)
    }
}

fn uri_spec_from(spec: Value) -> std::result::Result<UriSpec, String> {
    let Value::Object(mut spec) = spec else {
        return Err(format!("uriSpec is {spec}, not an object"));
    };
    let parts = match spec.remove("parts") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(parts)) => parts,
        Some(other) => return Err(format!("uriSpec.parts is {other}, not an array")),
    };
    parts
        .into_iter()
        .map(|p| {
            let value = p.get("value").and_then(Value::as_str).unwrap_or_default();
            let variable = p.get("variable").and_then(Value::as_bool).unwrap_or(false);
            Ok(UriPart {
                value: value.to_string(),
                variable,
            })
        })
        .collect::<std::result::Result<Vec<_>, String>>()
        .map(UriSpec::from_parts)
}

/// Jackson's type information split off a payload: `{"@class": C, ...}` and `[C, value]` (C a
/// Java class name) give `(value, Some(C))`; anything else is plain JSON.
fn split_payload(payload: Option<Value>) -> (Option<Value>, Option<String>) {
    match payload {
        None | Some(Value::Null) => (None, None),
        Some(Value::Object(mut m)) => {
            let typed = m
                .iter()
                .next()
                .is_some_and(|(k, v)| k == "@class" && v.is_string());
            let class = if typed {
                m.shift_remove("@class")
                    .and_then(|c| c.as_str().map(str::to_string))
            } else {
                None
            };
            (Some(Value::Object(m)), class)
        }
        Some(Value::Array(a)) if a.len() == 2 && a[0].as_str().is_some_and(is_java_class) => {
            let mut a = a.into_iter();
            let class = a.next().and_then(|c| c.as_str().map(str::to_string));
            (a.next().filter(|v| !v.is_null()), class)
        }
        Some(other) => (Some(other), None),
    }
}

/// `java.util.ArrayList`, `com.example.Outer$Inner`: dotted Java identifiers.
fn is_java_class(s: &str) -> bool {
    s.contains('.')
        && s.split('.').all(|seg| {
            let mut cs = seg.chars();
            cs.next()
                .is_some_and(|c| c.is_alphabetic() || c == '_' || c == '$')
                && cs.all(|c| c.is_alphanumeric() || c == '_' || c == '$')
        })
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

fn field(o: &mut String, name: &str, first: bool) {
    if !first {
        o.push(',');
    }
    string(o, name);
    o.push(':');
}

fn opt<T>(o: &mut String, v: Option<T>, f: impl FnOnce(&mut String, T)) {
    match v {
        Some(v) => f(o, v),
        None => o.push_str("null"),
    }
}

/// A JSON string as Jackson escapes it.
fn string(o: &mut String, s: &str) {
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\u{8}' => o.push_str("\\b"),
            '\t' => o.push_str("\\t"),
            '\n' => o.push_str("\\n"),
            '\u{c}' => o.push_str("\\f"),
            '\r' => o.push_str("\\r"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04X}", c as u32);
            }
            // Jackson's UTF-8 writer escapes each half of a surrogate pair: a character past
            // U+FFFF is two `\uXXXX` (upper-case hex), not its four UTF-8 bytes.
            c if (c as u32) > 0xFFFF => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    let _ = write!(o, "\\u{:04X}", u);
                }
            }
            c => o.push(c),
        }
    }
    o.push('"');
}

/// Any JSON value, compactly, strings as Jackson escapes them, integers as their text, doubles
/// as Jackson writes a Java `Double` ([`java_double`]).
fn value(o: &mut String, v: &Value) {
    match v {
        Value::Null => o.push_str("null"),
        Value::Bool(b) => o.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match n.as_f64().filter(|_| n.is_f64()) {
            Some(d) => java_double(o, d),
            None => {
                let _ = write!(o, "{n}");
            }
        },
        Value::String(s) => string(o, s),
        Value::Array(a) => {
            o.push('[');
            for (i, v) in a.iter().enumerate() {
                if i > 0 {
                    o.push(',');
                }
                value(o, v);
            }
            o.push(']');
        }
        Value::Object(m) => {
            o.push('{');
            for (i, (k, v)) in m.iter().enumerate() {
                if i > 0 {
                    o.push(',');
                }
                string(o, k);
                o.push(':');
                value(o, v);
            }
            o.push('}');
        }
    }
}

/// A double as Jackson writes a Java `Double` (`Double.toString`): the shortest digits that
/// read back as the same double (two when one would do and another second digit is closer, as
/// `4.9E-324`), plain between 10⁻³ and 10⁷ (`100.0`, `0.00123`), else computerized scientific
/// notation (`1.0E10`, `2.5E-4`); always a digit after the point.
fn java_double(o: &mut String, d: f64) {
    if d == 0.0 {
        o.push_str(if d.is_sign_negative() { "-0.0" } else { "0.0" });
        return;
    }
    if d.is_sign_negative() {
        o.push('-');
    }
    let x = d.abs();
    // Rust's `{:e}` is the shortest round-trip form; `{:.1e}` the closest two digits.
    let mut sci = format!("{x:e}");
    if !sci.contains('.') {
        sci = format!("{x:.1e}");
    }
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let mut digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    while digits.len() > 1 && digits.ends_with('0') {
        digits.pop();
    }
    if (1e-3..1e7).contains(&x) {
        if exp >= 0 {
            let int_len = exp as usize + 1;
            if digits.len() <= int_len {
                o.push_str(&digits);
                o.extend(std::iter::repeat('0').take(int_len - digits.len()));
                o.push_str(".0");
            } else {
                o.push_str(&digits[..int_len]);
                o.push('.');
                o.push_str(&digits[int_len..]);
            }
        } else {
            o.push_str("0.");
            o.extend(std::iter::repeat('0').take((-exp - 1) as usize));
            o.push_str(&digits);
        }
    } else {
        o.push_str(&digits[..1]);
        o.push('.');
        o.push_str(if digits.len() > 1 { &digits[1..] } else { "0" });
        let _ = write!(o, "E{exp}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instance_is_written_in_jacksons_order_and_read_back() {
        let mut i = ServiceInstance::new("orders");
        i.id = "6f2c".into();
        i.address = Some("10.0.0.7".into());
        i.port = Some(8080);
        i.registration_time_utc = 1_700_000_000_123;
        i.uri_spec = Some(UriSpec::new("{scheme}://{address}:{port}").unwrap());
        let compat = String::from_utf8(i.to_json(true)).unwrap();
        assert_eq!(
            compat,
            r#"{"name":"orders","id":"6f2c","address":"10.0.0.7","port":8080,"sslPort":null,"payload":null,"registrationTimeUTC":1700000000123,"serviceType":"DYNAMIC","uriSpec":{"parts":[{"value":"scheme","variable":true},{"value":"://","variable":false},{"value":"address","variable":true},{"value":":","variable":false},{"value":"port","variable":true}]}}"#
        );
        let full = String::from_utf8(i.to_json(false)).unwrap();
        assert!(full.ends_with(r#"]},"enabled":true}"#), "{full}");
        assert_eq!(ServiceInstance::from_json(compat.as_bytes()).unwrap(), i);
        assert_eq!(ServiceInstance::from_json(full.as_bytes()).unwrap(), i);
    }

    #[test]
    fn payload_type_information_is_split_off_and_written_back() {
        let node = br#"{"name":"n","id":"i","address":null,"port":null,"sslPort":null,"payload":{"@class":"com.example.Details","region":"eu","weight":1.0E10},"registrationTimeUTC":5,"serviceType":"STATIC","uriSpec":null,"extraField":[1,2]}"#;
        let i = ServiceInstance::from_json(node).unwrap();
        assert_eq!(i.payload_class.as_deref(), Some("com.example.Details"));
        assert_eq!(i.payload.as_ref().unwrap()["region"], "eu");
        assert_eq!(i.service_type, ServiceType::Static);
        assert!(i.enabled);
        assert_eq!(i.extra.keys().collect::<Vec<_>>(), ["extraField"]);
        assert_eq!(
            i.to_json(true),
            node.to_vec(),
            "byte for byte, numbers as written"
        );

        let list = br#"{"name":"n","id":"i","address":null,"port":null,"sslPort":null,"payload":["java.util.ArrayList",["a","b"]],"registrationTimeUTC":5,"serviceType":"DYNAMIC","uriSpec":null}"#;
        let i = ServiceInstance::from_json(list).unwrap();
        assert_eq!(i.payload_class.as_deref(), Some("java.util.ArrayList"));
        assert_eq!(i.payload, Some(serde_json::json!(["a", "b"])));
        assert_eq!(i.to_json(true), list.to_vec());

        // A list given without a class is written as Jackson writes a List (Java's readers
        // take a bare array's first element for a type id) and reads back with the class.
        let mut bare = ServiceInstance::new("n");
        bare.payload = Some(serde_json::json!(["eu", "us"]));
        let written = bare.to_json(true);
        assert!(
            String::from_utf8_lossy(&written)
                .contains(r#""payload":["java.util.ArrayList",["eu","us"]]"#),
            "{}",
            String::from_utf8_lossy(&written)
        );
        let back = ServiceInstance::from_json(&written).unwrap();
        assert_eq!(back.payload_class.as_deref(), Some("java.util.ArrayList"));
        assert_eq!(back.payload, bare.payload);

        // Plain JSON (another writer's) stays plain.
        let plain = br#"{"name":"n","id":"i","payload":["not a class",1]}"#;
        let i = ServiceInstance::from_json(plain).unwrap();
        assert_eq!(i.payload_class, None);
        assert_eq!(i.payload, Some(serde_json::json!(["not a class", 1])));
        assert_eq!(i.service_type, ServiceType::Dynamic);
    }

    #[test]
    fn read_text_survives_a_trip_through_the_full_json() {
        // What the Node face carries with a plain instance object: `to_json(false)` of a read
        // instance, read again, still writes the unknown fields and the payload as they were.
        let node = br#"{"name":"n","id":"i","address":null,"port":1,"sslPort":null,"payload":{"@class":"com.example.D","big":9007199254740993,"w":1.0E10},"registrationTimeUTC":5,"serviceType":"DYNAMIC","uriSpec":null,"zone":{"rack":"r1","weight":2.50}}"#;
        let read = ServiceInstance::from_json(node).unwrap();
        assert!(read.holds_read_text());
        let mut again = ServiceInstance::from_json(&read.to_json(false)).unwrap();
        assert!(again.holds_read_text());
        again.port = Some(2);
        let written = String::from_utf8(again.to_json(true)).unwrap();
        assert_eq!(
            written,
            String::from_utf8_lossy(node).replace(r#""port":1"#, r#""port":2"#)
        );
        assert!(!ServiceInstance::new("n").holds_read_text());
        let mut fresh = ServiceInstance::new("n");
        fresh.payload = Some(serde_json::json!({"a": 1}));
        assert!(!fresh.holds_read_text(), "nothing read: nothing to carry");
        for (payload, holds) in [
            ("null", false),
            (r#"{"a":1,"w":1.0E10}"#, false),
            (r#"{"big":9007199254740993}"#, false),
            (r#"{"w":2.50}"#, true),
            (r#"{"w":1E10}"#, true),
        ] {
            let node = format!(r#"{{"name":"n","id":"i","payload":{payload}}}"#);
            let read = ServiceInstance::from_json(node.as_bytes()).unwrap();
            assert_eq!(read.holds_read_text(), holds, "{payload}");
            let mut changed = read.clone();
            changed.payload = Some(serde_json::json!({"w": 3}));
            assert!(!changed.holds_read_text(), "{payload} changed");
        }
    }

    #[test]
    fn doubles_are_written_as_javas_double_to_string() {
        // Jackson writes a payload's doubles with Double.toString; a fresh payload was written
        // with serde_json's text (0.00025, 10000000000.0) before: the interop scenario's
        // re-encoding by Curator found it.
        for (d, java) in [
            (0.00025, "2.5E-4"),
            (1e10, "1.0E10"),
            (1.5, "1.5"),
            (0.1, "0.1"),
            (100.0, "100.0"),
            (1e7, "1.0E7"),
            (9999999.0, "9999999.0"),
            (1e-3, "0.001"),
            (9.99e-4, "9.99E-4"),
            (1e-5, "1.0E-5"),
            (-2.5e-7, "-2.5E-7"),
            (123456.789, "123456.789"),
            (f64::MAX, "1.7976931348623157E308"),
            (f64::from_bits(1), "4.9E-324"),
            (-0.0, "-0.0"),
            (0.0, "0.0"),
            (3e21, "3.0E21"),
            (-12.0, "-12.0"),
        ] {
            let mut o = String::new();
            java_double(&mut o, d);
            assert_eq!(o, java, "{d:e}");
        }
        let mut i = ServiceInstance::new("n");
        i.id = "i".into();
        i.payload = Some(
            serde_json::json!({"ratio": 0.00025, "n": 7, "big": 10_000_000_000i64, "w": [1e10]}),
        );
        i.payload_class = Some("java.util.LinkedHashMap".into());
        let json = String::from_utf8(i.to_json(true)).unwrap();
        assert!(
            json.contains(r#""payload":{"@class":"java.util.LinkedHashMap","ratio":2.5E-4,"n":7,"big":10000000000,"w":[1.0E10]}"#),
            "{json}"
        );
        assert_eq!(ServiceInstance::from_json(json.as_bytes()).unwrap(), i);
    }

    #[test]
    fn strings_are_escaped_as_jackson_escapes_them() {
        let mut i = ServiceInstance::new("a\"b\\c\n\u{1}é/\u{7f}");
        i.id = "x".into();
        let json = String::from_utf8(i.to_json(true)).unwrap();
        assert!(json.starts_with(r#"{"name":"a\"b\\c\n\u0001é/"#), "{json}");
        assert_eq!(
            ServiceInstance::from_json(json.as_bytes()).unwrap().name,
            i.name
        );
    }

    #[test]
    fn characters_past_the_bmp_are_escaped_as_surrogate_pairs_as_jackson_does() {
        // Curator 5.9's Jackson (UTF8JsonGenerator) writes U+1F600 as \uD83D\uDE00; the
        // interop scenario's golden bytes showed it. Below U+10000 everything is written as is.
        let mut i = ServiceInstance::new("a\u{1F600}b\u{10000}\u{2028}\u{FFFF}");
        i.id = "x".into();
        let json = String::from_utf8(i.to_json(true)).unwrap();
        assert!(
            json.starts_with("{\"name\":\"a\\uD83D\\uDE00b\\uD800\\uDC00\u{2028}\u{FFFF}\","),
            "{json}"
        );
        assert_eq!(ServiceInstance::from_json(json.as_bytes()).unwrap(), i);
    }

    #[test]
    fn validate_refuses_what_is_no_node_name() {
        let mut i = ServiceInstance::new("svc");
        assert!(i.validate().is_ok());
        i.id = String::new();
        assert!(i
            .validate()
            .unwrap_err()
            .message()
            .contains("id must not be empty"));
        i.id = "x".into();
        i.name = String::new();
        assert!(i
            .validate()
            .unwrap_err()
            .message()
            .contains("name must not be empty"));
        i.name = "a/b".into();
        assert!(i.validate().is_err());
        i.name = "svc".into();
        i.port = Some(70000);
        assert!(i
            .validate()
            .unwrap_err()
            .message()
            .contains("port 70000 is not a port"));
        i.port = None;
        i.payload = Some(serde_json::json!([1]));
        i.payload_class = Some("MyList".into());
        assert!(i
            .validate()
            .unwrap_err()
            .message()
            .contains("payload_class"));
        i.payload = Some(serde_json::json!({"a": 1}));
        assert!(i.validate().is_ok(), "an object carries any @class");
    }

    #[test]
    fn a_typed_null_payload_reads_back_as_none() {
        let mut i = ServiceInstance::new("svc");
        i.payload_class = Some("java.lang.String".into());
        let back = ServiceInstance::from_json(&i.to_json(true)).unwrap();
        assert_eq!(back.payload, None);
        assert_eq!(back, i);
    }

    /// What Jackson's default mapper coerces (a Java reader takes it), we take too.
    #[test]
    fn scalars_are_coerced_as_jackson_coerces_them() {
        let i = ServiceInstance::from_json(
            br#"{"name":"svc","id":42,"address":true,"port":"8080","sslPort":" 8443 ","registrationTimeUTC":"1700000000000","enabled":"FALSE"}"#,
        )
        .unwrap();
        assert_eq!(i.id, "42");
        assert_eq!(i.address.as_deref(), Some("true"));
        assert_eq!((i.port, i.ssl_port), (Some(8080), Some(8443)));
        assert_eq!(i.registration_time_utc, 1_700_000_000_000);
        assert!(!i.enabled);
        let i = ServiceInstance::from_json(
            br#"{"name":"svc","id":1.0E10,"port":8080.9,"sslPort":"","registrationTimeUTC":1.7e12,"enabled":1}"#,
        )
        .unwrap();
        assert_eq!(i.id, "1.0E10", "a number's own text");
        assert_eq!(
            (i.port, i.ssl_port),
            (Some(8080), None),
            "truncated; empty is null"
        );
        assert_eq!(i.registration_time_utc, 1_700_000_000_000);
        assert!(i.enabled);
        let i = ServiceInstance::from_json(br#"{"name":"svc","id":"x","enabled":0}"#).unwrap();
        assert!(!i.enabled);
    }

    #[test]
    fn bad_nodes_are_corrupted_data_saying_why() {
        for (bytes, why) in [
            (&b"not json"[..], "service instance JSON"),
            (b"[1]", "not a JSON object"),
            (br#"{"port":"eighty"}"#, "port"),
            (br#"{"port":4294967296}"#, "does not fit"),
            (br#"{"port":"4294967296"}"#, "does not fit"),
            (br#"{"port":1e300}"#, "not an integer"),
            (br#"{"name":{"a":1}}"#, "not a string"),
            (br#"{"serviceType":"WEIRD"}"#, "not a service type"),
            (br#"{"enabled":"yes"}"#, "enabled"),
        ] {
            match ServiceInstance::from_json(bytes) {
                Err(Error::CorruptedData(m)) => assert!(m.contains(why), "{m}"),
                other => panic!("{}: {other:?}", String::from_utf8_lossy(bytes)),
            }
        }
    }
}

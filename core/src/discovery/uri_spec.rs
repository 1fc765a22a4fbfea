//! Curator's `UriSpec`: a template such as `{scheme}://{address}:{port}/v1` rendered for an
//! instance, exactly as Curator renders it.

use std::collections::HashMap;
use std::fmt;

use super::instance::ServiceInstance;
use crate::{Error, Result};

/// One part of a [`UriSpec`]: literal text, or a variable's name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct UriPart {
    /// The text, or the variable's name (trimmed).
    pub value: String,
    /// Whether it names a variable (`{value}`).
    pub variable: bool,
}

/// Curator's `UriSpec`: literal parts and `{variables}`. The variables an instance gives:
/// `scheme` (`https` when it has an SSL port, else `http`), `name`, `id`, `address`, `port`,
/// `ssl-port`, `registration-time-utc`, `service-type` (lower case), and `[` / `]` for literal
/// braces; the caller's variables override them. A missing value renders as nothing (as
/// Curator, which logs it at DEBUG).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct UriSpec {
    parts: Vec<UriPart>,
}

impl UriSpec {
    /// Parses a template as Curator's `new UriSpec(raw)` does (a `StringTokenizer` on `{` and
    /// `}`: empty parts vanish, variable names are trimmed); an unbalanced brace is
    /// `InvalidArgument` with Curator's reason.
    pub fn new(template: &str) -> Result<UriSpec> {
        let mut parts = Vec::new();
        let mut inside = false;
        let mut token = String::new();
        let bad = |why: &str| Err(Error::invalid(format!("URI spec {template:?}: {why}")));
        let flush = |token: &mut String, inside: bool, parts: &mut Vec<UriPart>| {
            if !token.is_empty() {
                let value = if inside {
                    java_trim(token).to_string()
                } else {
                    std::mem::take(token)
                };
                token.clear();
                parts.push(UriPart {
                    value,
                    variable: inside,
                });
            }
        };
        for c in template.chars() {
            match c {
                '{' => {
                    flush(&mut token, inside, &mut parts);
                    if inside {
                        return bad("{ is not allowed inside of a variable specification");
                    }
                    inside = true;
                }
                '}' => {
                    flush(&mut token, inside, &mut parts);
                    if !inside {
                        return bad("} must be preceded by {");
                    }
                    inside = false;
                }
                c => token.push(c),
            }
        }
        flush(&mut token, inside, &mut parts);
        if inside {
            return bad("Final variable not closed - expected }");
        }
        Ok(UriSpec { parts })
    }

    /// A spec of these parts (as decoded from a node).
    pub fn from_parts(parts: Vec<UriPart>) -> UriSpec {
        UriSpec { parts }
    }

    /// The parts.
    pub fn parts(&self) -> &[UriPart] {
        &self.parts
    }

    /// Renders the spec for `instance` (or none: only `scheme` `http` and the braces) with the
    /// caller's `variables` on top.
    pub fn build(
        &self,
        instance: Option<&ServiceInstance>,
        variables: &HashMap<String, String>,
    ) -> String {
        let mut vars: HashMap<&str, String> = HashMap::new();
        vars.insert("[", "{".into());
        vars.insert("]", "}".into());
        vars.insert("scheme", "http".into());
        if let Some(i) = instance {
            let opt = |v: Option<i32>| v.map(|v| v.to_string()).unwrap_or_default();
            vars.insert("name", i.name.clone());
            vars.insert("id", i.id.clone());
            vars.insert("address", i.address.clone().unwrap_or_default());
            vars.insert("port", opt(i.port));
            vars.insert("ssl-port", opt(i.ssl_port));
            vars.insert("registration-time-utc", i.registration_time_utc.to_string());
            vars.insert("service-type", i.service_type.name().to_ascii_lowercase());
            if i.ssl_port.is_some() {
                vars.insert("scheme", "https".into());
            }
        }
        for (k, v) in variables {
            vars.insert(k, v.clone());
        }
        let mut out = String::new();
        for p in &self.parts {
            if !p.variable {
                out.push_str(&p.value);
            } else if let Some(v) = vars.get(p.value.as_str()) {
                out.push_str(v);
            } else {
                tracing::debug!(variable = %p.value, "URI spec: variable not found");
            }
        }
        out
    }
}

/// The template again: literal parts as they are, variables in braces.
impl fmt::Display for UriSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for p in &self.parts {
            if p.variable {
                write!(f, "{{{}}}", p.value)?;
            } else {
                f.write_str(&p.value)?;
            }
        }
        Ok(())
    }
}

/// Java's `String.trim()`: every char up to U+0020 at either end.
fn java_trim(s: &str) -> &str {
    s.trim_matches(|c: char| c <= ' ')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::{ServiceInstance, ServiceType};

    fn no_vars() -> HashMap<String, String> {
        HashMap::new()
    }

    #[test]
    fn templates_parse_and_render_as_curators() {
        let spec = UriSpec::new("{scheme}://foo.com:{port}/{ fred }{[}x{]}").unwrap();
        assert_eq!(spec.parts().len(), 8);
        assert_eq!(spec.parts()[4].value, "fred");
        let mut i = ServiceInstance::new("svc");
        i.id = "the-id".into();
        i.port = Some(1234);
        i.registration_time_utc = 42;
        let mut vars = HashMap::new();
        vars.insert("fred".to_string(), "barney".to_string());
        assert_eq!(spec.build(Some(&i), &vars), "http://foo.com:1234/barney{x}");
        i.ssl_port = Some(443);
        assert_eq!(
            UriSpec::new(
                "{scheme}:{ssl-port}:{service-type}:{registration-time-utc}:{address}:{missing}"
            )
            .unwrap()
            .build(Some(&i), &no_vars()),
            "https:443:dynamic:42::"
        );
        i.service_type = ServiceType::DynamicSequential;
        assert_eq!(
            UriSpec::new("{service-type}")
                .unwrap()
                .build(Some(&i), &no_vars()),
            "dynamic_sequential"
        );
        assert_eq!(
            UriSpec::new("{scheme}/{port}")
                .unwrap()
                .build(None, &no_vars()),
            "http/"
        );
        assert_eq!(spec.to_string(), "{scheme}://foo.com:{port}/{fred}{[}x{]}");
        assert!(UriSpec::new("").unwrap().parts().is_empty());
        assert!(UriSpec::new("{}").unwrap().parts().is_empty());
    }

    #[test]
    fn unbalanced_braces_are_refused_with_curators_reasons() {
        for (bad, why) in [
            ("{a{b}}", "{ is not allowed inside"),
            ("a}", "} must be preceded by {"),
            ("{a", "Final variable not closed"),
        ] {
            let e = UriSpec::new(bad).unwrap_err();
            assert!(e.message().contains(why), "{bad}: {e}");
        }
    }
}

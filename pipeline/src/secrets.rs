//! Secret values this process holds, and their redaction from any text that leaves it.
//!
//! Defence in depth behind the compiler sandbox: whatever a child process prints, whatever a
//! prompt or a feedback message holds, is passed through [`redact`] before it is sent, stored
//! or shown. The secrets are the values of environment variables whose names say they are
//! secret (`*KEY*`, `*TOKEN*`, `*SECRET*`, `*PASSWORD*`, `*PASSWD*`, `*CREDENTIAL*`, `*AUTH*`),
//! and every value [`register`]ed (an endpoint's API key, whatever its variable is called).
//! Values shorter than 8 characters are not treated as secrets: redacting them would mangle
//! ordinary text and they protect nothing.

use std::borrow::Cow;
use std::sync::{OnceLock, RwLock};

/// The shortest value treated as a secret.
const MIN_LEN: usize = 8;

/// What replaces a secret value.
pub const REDACTED: &str = "[redacted]";

/// A set of secret values.
#[derive(Debug, Default)]
pub struct Secrets {
    values: Vec<String>,
}

impl Secrets {
    /// The secrets of an environment given as (name, value) pairs.
    pub fn from_vars(vars: impl IntoIterator<Item = (String, String)>) -> Secrets {
        let mut s = Secrets::default();
        for (name, value) in vars {
            if is_secret_name(&name) {
                s.add(value);
            }
        }
        s
    }

    /// Adds a value (ignored when shorter than 8 characters).
    pub fn add(&mut self, value: String) {
        if value.len() >= MIN_LEN && !self.values.contains(&value) {
            self.values.push(value);
            // Longest first, so a secret that contains another is replaced whole.
            self.values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        }
    }

    /// `text` with every secret value replaced by [`REDACTED`].
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for v in &self.values {
            if out.contains(v.as_str()) {
                out = Cow::Owned(out.replace(v.as_str(), REDACTED));
            }
        }
        out
    }

    /// Whether `text` holds a secret value.
    pub fn leaks(&self, text: &[u8]) -> bool {
        self.values
            .iter()
            .any(|v| text.windows(v.len()).any(|w| w == v.as_bytes()))
    }
}

fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    [
        "KEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "CREDENTIAL",
        "AUTH",
    ]
    .iter()
    .any(|w| upper.contains(w))
}

fn global() -> &'static RwLock<Secrets> {
    static SECRETS: OnceLock<RwLock<Secrets>> = OnceLock::new();
    SECRETS.get_or_init(|| {
        let vars = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)));
        RwLock::new(Secrets::from_vars(vars))
    })
}

/// Treats `value` as a secret of this process from now on.
pub fn register(value: &str) {
    let mut s = global().write().unwrap_or_else(|e| e.into_inner());
    s.add(value.to_string());
}

/// Removes from `cmd`'s environment every variable that is secret by its name or its value,
/// for a child that needs the rest of this process's environment (the GPU worker).
pub fn scrub(cmd: &mut std::process::Command) {
    let s = global().read().unwrap_or_else(|e| e.into_inner());
    for (name, value) in std::env::vars_os() {
        let secret_name = name.to_str().is_none_or(is_secret_name);
        if secret_name || s.leaks(value.as_encoded_bytes()) {
            cmd.env_remove(name);
        }
    }
}

/// `text` with this machine's folders named by role, not by path: the home folder as `~` and the
/// temp folder as `$TMPDIR`, so that feedback and stored messages carry no host path.
pub fn mask_host_paths(text: &str) -> String {
    let mut out = text.to_string();
    let tmp = std::env::temp_dir();
    let tmp = tmp.to_string_lossy();
    let tmp = tmp.trim_end_matches('/');
    if tmp.len() > 1 {
        out = out.replace(&format!("{tmp}/"), "$TMPDIR/");
    }
    if let Some(home) = std::env::var_os("HOME") {
        let home = home.to_string_lossy();
        let home = home.trim_end_matches('/');
        if home.len() > 1 {
            out = out.replace(&format!("{home}/"), "~/");
        }
    }
    out
}

/// `text` with every secret value of this process replaced by [`REDACTED`].
pub fn redact(text: &str) -> Cow<'_, str> {
    let s = global().read().unwrap_or_else(|e| e.into_inner());
    match s.redact(text) {
        Cow::Borrowed(_) => Cow::Borrowed(text),
        Cow::Owned(o) => Cow::Owned(o),
    }
}

/// Bytes with every secret value replaced; bytes that are not UTF-8 are redacted as text
/// read lossily only when they hold a secret, and kept exactly otherwise.
pub fn redact_bytes(bytes: &[u8]) -> Vec<u8> {
    let s = global().read().unwrap_or_else(|e| e.into_inner());
    if !s.leaks(bytes) {
        return bytes.to_vec();
    }
    s.redact(&String::from_utf8_lossy(bytes))
        .into_owned()
        .into_bytes()
}

/// A reply body from outside (an endpoint's JSON) with every secret value redacted, also where
/// the body spells it with JSON escapes (`\u0073k-…`) that only a parser turns back into the
/// secret: the strings of a JSON body are redacted after decoding, and the body is written
/// again only when one of them held a secret. Bodies that are not JSON are redacted as bytes.
pub fn redact_reply(bytes: &[u8]) -> Vec<u8> {
    let plain = redact_bytes(bytes);
    let Ok(mut value) = serde_json::from_slice::<serde_json::Value>(&plain) else {
        return plain;
    };
    let s = global().read().unwrap_or_else(|e| e.into_inner());
    if !redact_json(&s, &mut value) {
        return plain;
    }
    serde_json::to_vec(&value).unwrap_or(plain)
}

/// Redacts every string (and key) of `v` in place; whether any held a secret.
fn redact_json(s: &Secrets, v: &mut serde_json::Value) -> bool {
    use serde_json::Value;
    match v {
        Value::String(text) => match s.redact(text) {
            Cow::Borrowed(_) => false,
            Cow::Owned(o) => {
                *text = o;
                true
            }
        },
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |any, item| redact_json(s, item) | any),
        Value::Object(map) => {
            let leaked_key = map.keys().any(|k| s.leaks(k.as_bytes()));
            let mut any = false;
            if leaked_key {
                let old = std::mem::take(map);
                for (k, val) in old {
                    map.insert(s.redact(&k).into_owned(), val);
                }
                any = true;
            }
            map.values_mut()
                .fold(any, |any, item| redact_json(s, item) | any)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn values_of_secret_names_are_redacted() {
        let s = Secrets::from_vars(vars(&[
            ("OPENAI_API_KEY", "sk-abcdefgh12345"),
            ("GITHUB_TOKEN", "ghp_zzzzzzzzzz"),
            ("HOME", "/home/someone-long"),
            ("SHORT_KEY", "abc"),
        ]));
        let text = "key=sk-abcdefgh12345 tok=ghp_zzzzzzzzzz home=/home/someone-long abc";
        assert_eq!(
            s.redact(text),
            "key=[redacted] tok=[redacted] home=/home/someone-long abc"
        );
        assert!(s.leaks(text.as_bytes()));
        assert!(!s.leaks(b"nothing here"));
    }

    /// Issue 55, finding 3: an endpoint that echoes the key back, also JSON-escaped.
    #[test]
    fn issue_55_a_reply_that_echoes_a_key_is_stored_without_it() {
        register("sk-echo-test-0123456789");
        let escaped: String = "sk-echo-test-0123456789"
            .chars()
            .map(|c| format!("\\u{:04x}", c as u32))
            .collect();
        let body = format!(
            r#"{{"choices":[{{"message":{{"content":"key {escaped} and sk-echo-test-0123456789"}}}}],"echo":"{escaped}"}}"#
        );
        let out = redact_reply(body.as_bytes());
        let parsed: serde_json::Value = serde_json::from_slice(&out).expect("still JSON");
        let text = parsed.to_string();
        assert!(!text.contains("sk-echo-test"), "{text}");
        assert!(!String::from_utf8_lossy(&out).contains(&escaped));
        assert_eq!(
            parsed["choices"][0]["message"]["content"],
            "key [redacted] and [redacted]"
        );
        // A body without a secret is kept byte for byte.
        let clean = br#"{"a": "\u0041"}"#;
        assert_eq!(redact_reply(clean), clean.to_vec());
        assert_eq!(
            redact_reply(b"not json sk-echo-test-0123456789"),
            b"not json [redacted]"
        );
    }

    #[test]
    fn a_secret_inside_another_is_replaced_whole() {
        let mut s = Secrets::default();
        s.add("secret-1234".into());
        s.add("my-secret-12345678".into());
        assert_eq!(s.redact("my-secret-12345678"), "[redacted]");
    }

    #[test]
    fn registered_values_are_redacted_by_the_process() {
        register("registered-value-for-the-test");
        assert_eq!(
            redact("a registered-value-for-the-test b"),
            "a [redacted] b"
        );
        assert_eq!(
            redact_bytes(b"x registered-value-for-the-test"),
            b"x [redacted]".to_vec()
        );
        assert!(matches!(redact("clean"), Cow::Borrowed("clean")));
    }
}

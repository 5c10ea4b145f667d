//! The queue's Redis connection: the maintained `redis` crate underneath (TLS with
//! `rediss://`, ACL user and password), with the small call-and-reply surface the queue code
//! uses: a command is a list of byte strings, a reply a [`Reply`].
//!
//! Credentials never travel in the address that is shown: a [`Target`] holds the address and,
//! apart, the user and password (read from a file or the environment), and prints the address
//! alone.

use std::time::Duration;

/// Where Redis is and who this process is there.
#[derive(Clone)]
pub struct Target {
    /// `redis://host[:port][/db]` or `rediss://…` (TLS), without credentials.
    pub url: String,
    pub user: Option<String>,
    pub password: Option<String>,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("url", &self.url)
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "<set>"))
            .finish()
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.url)?;
        if let Some(u) = &self.user {
            write!(f, " as {u}")?;
        }
        Ok(())
    }
}

/// The environment variable holding the Redis password (and `PTXBENCH_REDIS_USER` its ACL
/// user), for servers and workers alike.
pub const PASSWORD_ENV: &str = "PTXBENCH_REDIS_PASSWORD";
pub const USER_ENV: &str = "PTXBENCH_REDIS_USER";

impl Target {
    /// The target at `url` with credentials from `password_file`, else the environment. An
    /// address that carries a password is refused: it would show on command lines and in logs.
    pub fn new(url: &str, password_file: Option<&std::path::Path>) -> Result<Target, String> {
        let rest = url
            .strip_prefix("redis://")
            .or_else(|| url.strip_prefix("rediss://"))
            .ok_or_else(|| format!("{url}: not a redis:// or rediss:// address"))?;
        if rest
            .split('/')
            .next()
            .is_some_and(|hostport| hostport.contains('@'))
        {
            return Err(format!(
                "the Redis address carries credentials, which would show in process lists and \
                 logs: give the password in {PASSWORD_ENV} or a file (--redis-password-file), \
                 and the user in {USER_ENV}"
            ));
        }
        let password = match password_file {
            Some(f) => Some(
                std::fs::read_to_string(f)
                    .map_err(|e| format!("reading the Redis password {}: {e}", f.display()))?
                    .trim()
                    .to_string(),
            ),
            None => std::env::var(PASSWORD_ENV).ok(),
        }
        .filter(|p| !p.is_empty());
        if let Some(p) = &password {
            crate::secrets::register(p);
        }
        Ok(Target {
            url: url.to_string(),
            user: std::env::var(USER_ENV).ok().filter(|u| !u.is_empty()),
            password,
        })
    }

    /// A target with no credentials (tests, a Redis on loopback).
    pub fn plain(url: &str) -> Target {
        Target {
            url: url.to_string(),
            user: None,
            password: None,
        }
    }

    fn info(&self) -> Result<redis::ConnectionInfo, RedisError> {
        use redis::IntoConnectionInfo as _;
        let mut info = self
            .url
            .as_str()
            .into_connection_info()
            .map_err(|_| RedisError::Url(self.url.clone()))?;
        if let Some(u) = &self.user {
            info.redis.username = Some(u.clone());
        }
        if let Some(p) = &self.password {
            info.redis.password = Some(p.clone());
        }
        Ok(info)
    }
}

/// One reply.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Status(String),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Option<Vec<Reply>>),
}

impl Reply {
    /// The reply's bytes when it is a bulk or status string.
    pub fn bytes(&self) -> Option<&[u8]> {
        match self {
            Reply::Bulk(Some(b)) => Some(b),
            Reply::Status(s) => Some(s.as_bytes()),
            _ => None,
        }
    }

    pub fn text(&self) -> Option<String> {
        self.bytes()
            .map(|b| String::from_utf8_lossy(b).into_owned())
    }

    /// The items of an array (none for a null array or another reply).
    pub fn items(&self) -> &[Reply] {
        match self {
            Reply::Array(Some(v)) => v,
            _ => &[],
        }
    }
}

/// What went wrong talking to Redis.
#[derive(Debug, thiserror::Error)]
pub enum RedisError {
    #[error("redis: {0}")]
    Io(#[from] std::io::Error),
    /// An error reply (`-ERR …`).
    #[error("redis replied: {0}")]
    Server(String),
    #[error("redis: malformed reply: {0}")]
    Protocol(String),
    #[error("{0}: not a redis://host[:port][/db] or rediss:// address")]
    Url(String),
}

impl From<redis::RedisError> for RedisError {
    fn from(e: redis::RedisError) -> RedisError {
        if e.is_io_error() || e.is_timeout() || e.is_connection_dropped() {
            return RedisError::Io(std::io::Error::other(e.to_string()));
        }
        match e.code() {
            // The server's own code first (`BUSYGROUP Consumer Group name already exists`).
            Some(code) => RedisError::Server(format!("{code} {}", e.detail().unwrap_or_default())),
            None if e.kind() == redis::ErrorKind::AuthenticationFailed => {
                RedisError::Server(format!("authentication failed: {e}"))
            }
            None => RedisError::Protocol(e.to_string()),
        }
    }
}

/// One connection.
pub struct Connection {
    inner: redis::Connection,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Connection")
    }
}

/// How long a connection may take to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

impl Connection {
    /// Connects to `url` (no credentials; see [`Connection::to`]).
    pub fn open(url: &str) -> Result<Connection, RedisError> {
        Connection::to(&Target::plain(url))
    }

    /// Connects to `target`, authenticates and selects the database; every reply is awaited
    /// at most 30 s (a paused Redis is an error, not a hang).
    pub fn to(target: &Target) -> Result<Connection, RedisError> {
        let client = redis::Client::open(target.info()?)?;
        let inner = client.get_connection_with_timeout(CONNECT_TIMEOUT)?;
        let mut c = Connection { inner };
        c.set_timeout(Some(Duration::from_secs(30)))?;
        Ok(c)
    }

    /// How long a reply may take (a blocking read must allow its block time).
    pub fn set_timeout(&mut self, t: Option<Duration>) -> Result<(), RedisError> {
        self.inner.set_read_timeout(t)?;
        self.inner.set_write_timeout(t)?;
        Ok(())
    }

    /// Sends one command and reads its reply; an error reply is an `Err`.
    pub fn call(&mut self, args: &[&[u8]]) -> Result<Reply, RedisError> {
        let value: redis::Value = command(args).query(&mut self.inner)?;
        reply(value)
    }

    /// Sends several commands at once, then reads their replies in order; an error reply is
    /// an `Err`.
    pub fn pipeline(&mut self, commands: &[Vec<&[u8]>]) -> Result<Vec<Reply>, RedisError> {
        let mut p = redis::pipe();
        for args in commands {
            p.add_command(command(args));
        }
        let values: Vec<redis::Value> = p.query(&mut self.inner)?;
        values.into_iter().map(reply).collect()
    }
}

fn command(args: &[&[u8]]) -> redis::Cmd {
    let mut c = redis::Cmd::new();
    for a in args {
        c.arg(*a);
    }
    c
}

/// A reply as the queue reads it (RESP2 shapes).
fn reply(v: redis::Value) -> Result<Reply, RedisError> {
    use redis::Value as V;
    Ok(match v {
        V::Nil => Reply::Bulk(None),
        V::Int(i) => Reply::Int(i),
        V::BulkString(b) => Reply::Bulk(Some(b)),
        V::Array(items) | V::Set(items) => Reply::Array(Some(
            items.into_iter().map(reply).collect::<Result<_, _>>()?,
        )),
        V::Map(pairs) => {
            let mut flat = Vec::with_capacity(pairs.len() * 2);
            for (k, v) in pairs {
                flat.push(reply(k)?);
                flat.push(reply(v)?);
            }
            Reply::Array(Some(flat))
        }
        V::SimpleString(s) => Reply::Status(s),
        V::Okay => Reply::Status("OK".into()),
        V::Double(_)
        | V::Boolean(_)
        | V::BigNumber(_)
        | V::VerbatimString { .. }
        | V::Attribute { .. }
        | V::Push { .. } => {
            return Err(RedisError::Protocol(format!(
                "a reply of a kind the queue does not use: {v:?}"
            )));
        }
        V::ServerError(e) => {
            return Err(RedisError::Server(format!(
                "{} {}",
                e.code(),
                e.details().unwrap_or_default()
            )));
        }
    })
}

/// A stream entry: its id and its field/value pairs.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub id: String,
    pub fields: Vec<(Vec<u8>, Vec<u8>)>,
}

impl Entry {
    /// The value of `field`.
    pub fn get(&self, field: &str) -> Option<&[u8]> {
        self.fields
            .iter()
            .find(|(k, _)| k == field.as_bytes())
            .map(|(_, v)| v.as_slice())
    }
}

/// The entries of a reply that lists them (`[[id, [k, v, …]], …]`); deleted entries (whose
/// fields are null) are left out.
pub fn entries(list: &Reply) -> Vec<Entry> {
    list.items()
        .iter()
        .filter_map(|e| {
            let [id, fields @ Reply::Array(Some(_))] = e.items() else {
                return None;
            };
            let id = id.text()?;
            let fields = fields
                .items()
                .chunks(2)
                .filter_map(|kv| match kv {
                    [k, v] => Some((k.bytes()?.to_vec(), v.bytes()?.to_vec())),
                    _ => None,
                })
                .collect();
            Some(Entry { id, fields })
        })
        .collect()
}

//! A Chrome DevTools Protocol client over one websocket (sync, tungstenite): commands with
//! ids and their replies, events kept until asked for, sessions of attached targets
//! (flat mode). `bench::web` drives headless chromium with it. The framing of messages is
//! pure ([`request`], [`Incoming::parse`]) and unit-tested; [`Cdp`] is the socket shell.

use std::collections::VecDeque;
use std::io::ErrorKind;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tungstenite::{Message, WebSocket};

/// An event (a message without id).
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub method: String,
    /// The attached target's session it belongs to (none: the browser's).
    pub session: Option<String>,
    pub params: Value,
}

/// A message from the browser.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// The reply to command `id`: its result, or the protocol's error message.
    Reply {
        id: u64,
        result: Result<Value, String>,
    },
    Event(Event),
}

impl Incoming {
    pub fn parse(text: &str) -> Result<Incoming, String> {
        let v: Value = serde_json::from_str(text).map_err(|e| format!("devtools: {e}: {text}"))?;
        let session = v["sessionId"].as_str().map(str::to_string);
        if let Some(id) = v["id"].as_u64() {
            let result = match &v["error"] {
                Value::Null => Ok(v["result"].clone()),
                e => Err(e["message"].as_str().unwrap_or("error").to_string()),
            };
            return Ok(Incoming::Reply { id, result });
        }
        let method = v["method"]
            .as_str()
            .ok_or(format!("devtools: no id, no method: {text}"))?;
        Ok(Incoming::Event(Event {
            method: method.to_string(),
            session,
            params: v["params"].clone(),
        }))
    }
}

/// Command `id` as the protocol's JSON text.
pub fn request(id: u64, session: Option<&str>, method: &str, params: Value) -> String {
    let mut v = json!({ "id": id, "method": method, "params": params });
    if let Some(s) = session {
        v["sessionId"] = json!(s);
    }
    v.to_string()
}

/// A DevTools connection to a browser.
pub struct Cdp {
    ws: WebSocket<TcpStream>,
    next_id: u64,
    events: VecDeque<Event>,
}

impl Cdp {
    /// The websocket handshake on a connected stream (`url`: `ws://127.0.0.1:PORT/devtools/…`).
    pub fn connect(stream: TcpStream, url: &str) -> anyhow::Result<Cdp> {
        stream.set_nodelay(true)?;
        let (ws, _) = tungstenite::client(url, stream)
            .map_err(|e| anyhow::anyhow!("devtools handshake with {url}: {e}"))?;
        Ok(Cdp {
            ws,
            next_id: 1,
            events: VecDeque::new(),
        })
    }

    /// Sends a command and waits up to `timeout` for its reply (events meanwhile are kept).
    pub fn call(
        &mut self,
        session: Option<&str>,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> anyhow::Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        let text = request(id, session, method, params);
        self.ws
            .send(Message::Text(text.into()))
            .map_err(|e| anyhow::anyhow!("devtools {method}: {e}"))?;
        let end = Instant::now() + timeout;
        loop {
            match self.next(end, method)? {
                Incoming::Reply { id: got, result } if got == id => {
                    return result.map_err(|e| anyhow::anyhow!("devtools {method}: {e}"));
                }
                Incoming::Reply { .. } => {}
                Incoming::Event(e) => self.events.push_back(e),
            }
        }
    }

    /// Waits up to `timeout` for event `method` of `session` (or takes it if it came already);
    /// other events that come meanwhile are dropped.
    pub fn wait_event(
        &mut self,
        session: Option<&str>,
        method: &str,
        timeout: Duration,
    ) -> anyhow::Result<Event> {
        let mine = |e: &Event| e.method == method && e.session.as_deref() == session;
        if let Some(i) = self.events.iter().position(mine) {
            return Ok(self.events.remove(i).expect("position is in range"));
        }
        let end = Instant::now() + timeout;
        loop {
            if let Incoming::Event(e) = self.next(end, method)? {
                if mine(&e) {
                    return Ok(e);
                }
            }
        }
    }

    /// The next message, before `end`.
    fn next(&mut self, end: Instant, what: &str) -> anyhow::Result<Incoming> {
        loop {
            let left = end.saturating_duration_since(Instant::now());
            anyhow::ensure!(!left.is_zero(), "devtools {what}: no answer in time");
            self.ws.get_mut().set_read_timeout(Some(left))?;
            match self.ws.read() {
                Ok(Message::Text(t)) => {
                    return Incoming::parse(t.as_str()).map_err(anyhow::Error::msg)
                }
                Ok(_) => {}
                Err(tungstenite::Error::Io(e))
                    if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(e) => anyhow::bail!("devtools {what}: {e}"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_carry_their_id_and_session() {
        let r: Value =
            serde_json::from_str(&request(3, Some("S1"), "Page.enable", json!({}))).unwrap();
        assert_eq!(
            r,
            json!({"id": 3, "method": "Page.enable", "params": {}, "sessionId": "S1"})
        );
        let r: Value = serde_json::from_str(&request(4, None, "Browser.close", json!({}))).unwrap();
        assert!(r.get("sessionId").is_none());
    }

    #[test]
    fn replies_errors_and_events_are_told_apart() {
        let ok = Incoming::parse(r#"{"id":7,"result":{"targetId":"T"}}"#).unwrap();
        assert_eq!(
            ok,
            Incoming::Reply {
                id: 7,
                result: Ok(json!({"targetId": "T"}))
            }
        );
        let err = Incoming::parse(r#"{"id":8,"error":{"code":-32601,"message":"no such method"}}"#);
        assert_eq!(
            err.unwrap(),
            Incoming::Reply {
                id: 8,
                result: Err("no such method".into())
            }
        );
        let ev = Incoming::parse(
            r#"{"method":"Page.loadEventFired","params":{"timestamp":1.5},"sessionId":"S1"}"#,
        )
        .unwrap();
        let want = Event {
            method: "Page.loadEventFired".into(),
            session: Some("S1".into()),
            params: json!({"timestamp": 1.5}),
        };
        assert_eq!(ev, Incoming::Event(want));
        assert!(Incoming::parse(r#"{"params":{}}"#).is_err());
        assert!(Incoming::parse("not json").is_err());
    }
}

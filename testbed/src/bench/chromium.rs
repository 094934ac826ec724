//! The web application's browser (`bench::web`): one load of the page in a fresh headless
//! chromium in pc (a new profile: no cache, no connections), driven over the DevTools
//! protocol (`bench::cdp`): navigate, wait for the load event, read the page's Navigation and
//! Resource Timing entries (`suite::page_load`).

use std::net::{IpAddr, SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::suite::page::{self, Page};
use crate::suite::page_load::{self, Load};
use crate::topo::{Node, Proc, Topology};

use super::cdp::Cdp;

/// The longest one load may take (browser start to report).
const LOAD_TIMEOUT: Duration = Duration::from_secs(120);
/// Debian's chromium binary itself: its `/usr/bin/chromium` wrapper adds flags
/// (`--enable-remote-extensions`, `--load-extension`) that put more on the wire.
const CHROMIUM: &str = "/usr/lib/chromium/chromium";

/// chromium's flags: headless, the page's names mapped to srv (nothing else resolves), and
/// every background service off so that only the page goes on the wire.
fn args(profile: &Path, srv: IpAddr) -> Vec<String> {
    let mut a: Vec<String> = [
        CHROMIUM,
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--remote-debugging-address=127.0.0.1",
        "--remote-debugging-port=0",
        "--no-proxy-server",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-default-apps",
        "--disable-extensions",
        "--disable-domain-reliability",
        "--disable-client-side-phishing-detection",
        "--disable-breakpad",
        "--metrics-recording-only",
        "--safebrowsing-disable-auto-update",
        "--disable-features=Translate,OptimizationHints,MediaRouter,DialMediaRouteProvider,\
         AutofillServerCommunication,CertificateTransparencyComponentUpdater",
        "--mute-audio",
        "--window-size=1366,768",
    ]
    .map(String::from)
    .to_vec();
    a.push(format!("--user-data-dir={}", profile.display()));
    a.push(format!(
        "--host-resolver-rules=MAP *.example {srv}, MAP * ~NOTFOUND"
    ));
    a.push("about:blank".into());
    a
}

/// One load in a fresh chromium (a new profile: no cache, no connections): navigation start
/// to the load event's end, from the page's own timing entries.
pub(crate) fn load(topo: &Topology, srv: IpAddr, n: usize, page: &Page) -> anyhow::Result<Load> {
    let end = Instant::now() + LOAD_TIMEOUT;
    let profile = topo.tmpdir().join(format!("chromium-{n}"));
    let mut browser = topo.spawn(Node::Pc, &format!("chromium-{n}"), &args(&profile, srv))?;
    let (port, path) = devtools_endpoint(&profile, &mut browser, end)?;
    let stream = topo.run_in(Node::Pc, move || {
        TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], port)))
    })??;
    let mut cdp = Cdp::connect(stream, &format!("ws://127.0.0.1:{port}{path}"))?;
    let cmd = Duration::from_secs(30);
    let t = cdp.call(
        None,
        "Target.createTarget",
        json!({ "url": "about:blank" }),
        cmd,
    )?;
    let target = field(&t, "targetId")?;
    let a = cdp.call(
        None,
        "Target.attachToTarget",
        json!({ "targetId": target, "flatten": true }),
        cmd,
    )?;
    let session = field(&a, "sessionId")?;
    let s = Some(session.as_str());
    cdp.call(s, "Page.enable", json!({}), cmd)?;
    let nav = cdp.call(
        s,
        "Page.navigate",
        json!({ "url": page::URL }),
        LOAD_TIMEOUT,
    )?;
    if let Some(e) = nav["errorText"].as_str() {
        anyhow::bail!("chromium: navigating to {}: {e}", page::URL);
    }
    cdp.wait_event(
        s,
        "Page.loadEventFired",
        end.saturating_duration_since(Instant::now()),
    )?;
    let ask = json!({ "expression": page_load::BROWSER_REPORT, "returnByValue": true });
    let load = loop {
        let r = cdp.call(s, "Runtime.evaluate", ask.clone(), cmd)?;
        let report = r["result"]["value"].as_str().unwrap_or_default();
        if let Some(l) = page_load::from_browser(report, page).map_err(anyhow::Error::msg)? {
            // Kept with the tmpdir under STARPEP_KEEP_TMP: every request's timeline.
            std::fs::write(
                topo.tmpdir().join(format!("chromium-{n}-timing.json")),
                report,
            )?;
            break l;
        }
        anyhow::ensure!(Instant::now() < end, "chromium: the load event never ended");
        std::thread::sleep(Duration::from_millis(20));
    };
    let _ = cdp.call(None, "Browser.close", json!({}), cmd);
    browser.wait_timeout(Duration::from_secs(10));
    drop(browser);
    let _ = std::fs::remove_dir_all(&profile);
    Ok(load)
}

/// A string field of a DevTools reply.
fn field(reply: &serde_json::Value, key: &str) -> anyhow::Result<String> {
    reply[key]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| anyhow::anyhow!("chromium: no {key} in {reply}"))
}

/// The DevTools port and browser path chromium writes to `PROFILE/DevToolsActivePort`.
fn devtools_endpoint(
    profile: &Path,
    browser: &mut Proc,
    end: Instant,
) -> anyhow::Result<(u16, String)> {
    let file = profile.join("DevToolsActivePort");
    loop {
        if let Ok(t) = std::fs::read_to_string(&file) {
            let mut l = t.lines();
            if let (Some(Ok(port)), Some(path)) = (l.next().map(str::parse::<u16>), l.next()) {
                return Ok((port, path.to_string()));
            }
        }
        if let Some(st) = browser.try_status() {
            anyhow::bail!("chromium exited ({st}): {}", browser.log());
        }
        anyhow::ensure!(
            Instant::now() < end,
            "chromium: no DevTools port: {}",
            browser.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topo::addr;

    #[test]
    fn chromium_resolves_only_the_page_names() {
        let a = args(Path::new("/t/p"), IpAddr::V4(addr::SRV));
        assert!(a.contains(
            &"--host-resolver-rules=MAP *.example 10.2.0.2, MAP * ~NOTFOUND".to_string()
        ));
        assert!(a.contains(&"--user-data-dir=/t/p".to_string()));
        assert_eq!(a.last().map(String::as_str), Some("about:blank"));
    }
}

//! What one load of the web page measured (pure): read from the browser's Navigation and
//! Resource Timing entries ([`BROWSER_REPORT`]) or from curl's per-transfer lines
//! ([`CURL_WRITE_OUT`]), and checked against the page (`suite::page`): a load counts only if
//! every request of the page came from the network, whole. `bench::web` runs the loads.

use serde_json::Value;

use super::page::Page;

/// What a page load measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Load {
    /// Navigation start to the end of the load event (curl: first request to last byte).
    pub seconds: f64,
    /// Requests (the document and its subresources).
    pub requests: u32,
    /// Bytes received over HTTP, headers included.
    pub bytes: u64,
}

/// The JavaScript that reports a finished load (`Runtime.evaluate`, by value): the load
/// event's end and, for the document then each resource, `[name, transferSize,
/// encodedBodySize, responseEnd, startTime, connectStart, requestStart, responseStart]` (ms
/// from navigation start; the last four only for whoever reads a kept report).
pub const BROWSER_REPORT: &str = "(() => {
  const n = performance.getEntriesByType('navigation')[0];
  const all = [n, ...performance.getEntriesByType('resource')];
  return JSON.stringify({ load_ms: n.loadEventEnd,
    entries: all.map(e => [e.name, e.transferSize, e.encodedBodySize, e.responseEnd,
      e.startTime, e.connectStart, e.requestStart, e.responseStart]) });
})()";

/// curl's `--write-out` per transfer: status, body bytes, header bytes, URL.
pub const CURL_WRITE_OUT: &str = "%{http_code} %{size_download} %{size_header} %{url_effective}\\n";

/// A load from [`BROWSER_REPORT`]'s JSON; `Ok(None)` while the load event has not ended.
pub fn from_browser(report: &str, page: &Page) -> Result<Option<Load>, String> {
    let v: Value = serde_json::from_str(report).map_err(|e| format!("browser report: {e}"))?;
    let load_ms = v["load_ms"].as_f64().ok_or("browser report: no load_ms")?;
    if load_ms <= 0.0 {
        return Ok(None);
    }
    let entries = v["entries"]
        .as_array()
        .ok_or("browser report: no entries")?;
    let (mut bytes, mut body) = (0u64, 0u64);
    for e in entries {
        let (name, wire, enc, end) = (&e[0], e[1].as_u64(), e[2].as_u64(), e[3].as_f64());
        let (Some(wire), Some(enc), Some(end)) = (wire, enc, end) else {
            return Err(format!("browser report: bad entry {e}"));
        };
        if wire <= enc {
            return Err(format!(
                "{name}: not from the network ({wire} bytes on the wire)"
            ));
        }
        if end > load_ms {
            return Err(format!(
                "{name}: ended at {end} ms, after the load event ({load_ms} ms)"
            ));
        }
        bytes += wire;
        body += enc;
    }
    check(entries.len(), body, page)?;
    Ok(Some(Load {
        seconds: load_ms / 1000.0,
        requests: entries.len() as u32,
        bytes,
    }))
}

/// A load from curl's [`CURL_WRITE_OUT`] lines (every transfer of the load), which took
/// `seconds`.
pub fn from_curl(lines: &str, seconds: f64, page: &Page) -> Result<Load, String> {
    let (mut n, mut bytes, mut body) = (0usize, 0u64, 0u64);
    for l in lines.lines().filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = l.split_whitespace().collect();
        let num = |i: usize| f.get(i).and_then(|x| x.parse::<u64>().ok());
        let (Some(code), Some(down), Some(head)) = (num(0), num(1), num(2)) else {
            return Err(format!("curl: bad line {l:?}"));
        };
        if code != 200 {
            return Err(format!("curl: {l}"));
        }
        n += 1;
        bytes += down + head;
        body += down;
    }
    check(n, body, page)?;
    Ok(Load {
        seconds,
        requests: n as u32,
        bytes,
    })
}

/// Whether a load fetched the whole page.
fn check(requests: usize, body_bytes: u64, page: &Page) -> Result<(), String> {
    if requests != page.requests() || body_bytes != page.bytes() as u64 {
        return Err(format!(
            "incomplete load: {requests} requests, {body_bytes} body bytes (the page: {}, {})",
            page.requests(),
            page.bytes()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::page::URL;

    /// A browser report of the whole page: the document, then each resource, ending by `end_ms`.
    fn report(page: &Page, load_ms: f64, end_ms: f64, skip: usize) -> String {
        let mut entries = vec![serde_json::json!([URL, 20_300, 20_000, 900.0])];
        for r in page.resources.iter().skip(skip) {
            entries.push(serde_json::json!([r.url(), r.size + 300, r.size, end_ms]));
        }
        serde_json::json!({ "load_ms": load_ms, "entries": entries }).to_string()
    }

    #[test]
    fn a_whole_browser_load_counts_requests_and_wire_bytes() {
        let p = Page::median();
        let l = from_browser(&report(&p, 2500.0, 2400.0, 0), &p)
            .unwrap()
            .unwrap();
        assert_eq!(l.seconds, 2.5);
        assert_eq!(l.requests, 70);
        assert_eq!(l.bytes, p.bytes() as u64 + 70 * 300);
    }

    #[test]
    fn an_unfinished_or_partial_browser_load_is_not_a_load() {
        let p = Page::median();
        assert_eq!(from_browser(&report(&p, 0.0, 2400.0, 0), &p), Ok(None));
        let e = from_browser(&report(&p, 2500.0, 2400.0, 1), &p).unwrap_err();
        assert!(e.contains("incomplete load: 69 requests"), "{e}");
        let e = from_browser(&report(&p, 2500.0, 2600.0, 0), &p).unwrap_err();
        assert!(e.contains("after the load event"), "{e}");
        // A cached (or cross-origin, opaque) entry has no wire bytes.
        let cached = report(&p, 2500.0, 2400.0, 0).replacen("20300", "0", 1);
        assert!(from_browser(&cached, &p)
            .unwrap_err()
            .contains("not from the network"));
    }

    #[test]
    fn curl_lines_make_a_load_only_if_every_transfer_succeeded() {
        let p = Page::median();
        let mut lines = format!("200 20000 250 {URL}\n");
        for r in &p.resources {
            lines += &format!("200 {} 250 {}\n", r.size, r.url());
        }
        let l = from_curl(&lines, 3.0, &p).unwrap();
        assert_eq!((l.seconds, l.requests), (3.0, 70));
        assert_eq!(l.bytes, p.bytes() as u64 + 70 * 250);
        let failed = lines.replacen("200 ", "404 ", 2);
        assert!(from_curl(&failed, 3.0, &p).unwrap_err().contains("404"));
        let short: String = lines.lines().skip(1).map(|l| format!("{l}\n")).collect();
        assert!(from_curl(&short, 3.0, &p).is_err());
    }
}

//! The suite's web application (`--app web`): nginx in srv serves the median page
//! (`suite::page`) under its four host names, plain HTTP/1.1 with keep-alive; in pc, a fresh
//! headless chromium per load fetches it through the cell's setup and the load event is read
//! over the DevTools protocol (`bench::cdp`), or curl fetches it (`--web-loader curl`, what
//! `--check` uses). Several loads per cell; every one must fetch the whole page.

use std::net::IpAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::suite::cell::CellResult;
use crate::suite::page::{self, Page, HOSTS};
use crate::suite::page_load::{self, Load};
use crate::topo::{Node, Proc, Topology};

use super::bed::{Bed, BedSpec};
use super::chromium;
use super::{demo, owd};

/// What loads the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Loader {
    /// Headless chromium, a fresh profile per load (the report's loader).
    Chromium,
    /// curl, `--parallel --parallel-max 6` per host name (no browser needed).
    Curl,
}

impl Loader {
    /// The loader of a run: the one asked for, else curl for `--check`, chromium otherwise.
    pub fn for_run(asked: Option<Loader>, check: bool) -> Loader {
        asked.unwrap_or(if check {
            Loader::Curl
        } else {
            Loader::Chromium
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Loader::Chromium => "chromium",
            Loader::Curl => "curl",
        }
    }
}

/// Loads per cell, unless they would take the cell past [`BUDGET`] (long GEO loads).
const LOADS: usize = 5;
const BUDGET: Duration = Duration::from_secs(100);

/// Runs a web cell on a bed brought up from `spec`, end hosts on congestion control `cc`.
pub fn cell(spec: &BedSpec, cc: &str, loader: Loader, c: &mut CellResult) -> anyhow::Result<()> {
    let mut bed = Bed::up(spec)?;
    let loads = loads(&bed, cc, loader)?;
    bed.stop();
    let sat = bed.satlink_stats()?;
    c.emulator = Some(demo::emulator_counters(&sat["directions"]["down"]));
    let s: Vec<f64> = loads.iter().map(|l| l.seconds).collect();
    c.page_loads_s = Some(s.clone());
    c.page_load_s = crate::suite::stats::Spread::of(&s).map(|x| x.median);
    c.page_loader = Some(loader.name().to_string());
    c.page_requests = Some(loads[0].requests);
    c.page_bytes = Some(loads[0].bytes);
    Ok(())
}

/// Serves the page from srv and loads it from pc, [`LOADS`] times within [`BUDGET`].
fn loads(bed: &Bed, cc: &str, loader: Loader) -> anyhow::Result<Vec<Load>> {
    let topo = &bed.topo;
    // nginx and chromium cannot pick their congestion control, and a namespace can only make
    // the kernel's allowed ones its default: a host route from each end host to the other (the
    // one the kernel picks now, through the tunnel in position A) sets it.
    for (node, peer) in [(Node::Pc, bed.srv_addr()), (Node::Srv, bed.pc_addr())] {
        let peer = peer.to_string();
        let got = topo.run_ok(node, &["ip", "-o", "route", "get", &peer])?;
        let mut args = vec!["route".to_string(), "replace".into(), format!("{peer}/32")];
        args.extend(route_hops(&got));
        args.extend(["congctl".into(), cc.to_string()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        topo.ip(node, &args)?;
    }
    let page = Page::median();
    let site = topo.tmpdir().join("site");
    write_site(&page, &site)?;
    let _nginx = start_nginx(topo, &site)?;
    let access = topo.tmpdir().join("nginx-access.log");
    let t0 = Instant::now();
    let mut loads = Vec::new();
    let mut longest = Duration::ZERO;
    while loads.len() < LOADS && (loads.is_empty() || t0.elapsed() + longest < BUDGET) {
        let served = line_count(&access);
        let t = Instant::now();
        let load = match loader {
            Loader::Chromium => chromium::load(topo, bed.srv_addr(), loads.len(), &page)?,
            Loader::Curl => curl_load(topo, bed.srv_addr(), &page)?,
        };
        longest = longest.max(t.elapsed());
        let served = line_count(&access) - served;
        anyhow::ensure!(
            served == page.requests(),
            "nginx served {served} requests during a load of {} (something else on the wire?)",
            page.requests()
        );
        loads.push(load);
    }
    Ok(loads)
}

/// Every file of the page under `site/HOST/`.
fn write_site(page: &Page, site: &Path) -> anyhow::Result<()> {
    let www = site.join(HOSTS[0]);
    std::fs::create_dir_all(&www)?;
    std::fs::write(www.join("index.html"), page.html())?;
    for r in &page.resources {
        let f = site.join(r.host).join(r.path.trim_start_matches('/'));
        std::fs::create_dir_all(f.parent().expect("a resource path has a directory"))?;
        std::fs::write(&f, page.body(r))?;
    }
    Ok(())
}

/// nginx's configuration (pure): port 80, one root per host name (`site/$host`), HTTP/1.1
/// keep-alive, no compression, every file of its run in `tmp`; the timing and CORS headers let
/// the page's cross-host resources report their sizes and the fonts load.
pub fn nginx_conf(site: &Path, tmp: &Path) -> String {
    NGINX_CONF
        .replace("@TMP@", &tmp.display().to_string())
        .replace("@SITE@", &site.display().to_string())
}

const NGINX_CONF: &str = "daemon off;
worker_processes 1;
pid @TMP@/nginx.pid;
error_log @TMP@/nginx-error.log warn;
events { worker_connections 1024; }
http {
    # when each request was served (ms), on which connection and its how-manieth: the load's
    # waterfall as the server saw it (kept with STARPEP_KEEP_TMP=1)
    log_format timed '$msec $connection $connection_requests $host \"$request\" $status '
                     '$body_bytes_sent $request_time';
    access_log @TMP@/nginx-access.log timed;
    client_body_temp_path @TMP@/nginx-client_body;
    proxy_temp_path @TMP@/nginx-proxy;
    fastcgi_temp_path @TMP@/nginx-fastcgi;
    uwsgi_temp_path @TMP@/nginx-uwsgi;
    scgi_temp_path @TMP@/nginx-scgi;
    types {
        text/html html; text/css css; application/javascript js; image/gif gif;
        font/woff2 woff2; application/json json;
    }
    default_type application/octet-stream;
    sendfile on;
    tcp_nopush on;
    gzip off;
    keepalive_timeout 65s;
    keepalive_requests 1000;
    server {
        listen 80 default_server;
        root @SITE@/$host;
        add_header Timing-Allow-Origin \"*\" always;
        add_header Access-Control-Allow-Origin \"*\" always;
    }
}
";

/// nginx in srv (`nginx -p TMP -c TMP/nginx.conf`), once it listens.
fn start_nginx(topo: &Topology, site: &Path) -> anyhow::Result<Proc> {
    let tmp = topo.tmpdir();
    let conf = tmp.join("nginx.conf");
    std::fs::write(&conf, nginx_conf(site, tmp))?;
    let err = tmp.join("nginx-error.log");
    let (tmp_s, conf_s, err_s) = (
        tmp.display().to_string(),
        conf.display().to_string(),
        err.display().to_string(),
    );
    let mut p = topo.spawn(
        Node::Srv,
        "nginx",
        &["nginx", "-p", &tmp_s, "-e", &err_s, "-c", &conf_s],
    )?;
    if let Err(e) = owd::wait_listening(topo, 80) {
        let why = std::fs::read_to_string(&err).unwrap_or_default();
        anyhow::bail!(
            "{e}: nginx: {} {why}",
            p.try_status().map(|s| s.to_string()).unwrap_or_default()
        );
    }
    Ok(p)
}

fn line_count(p: &Path) -> usize {
    std::fs::read_to_string(p)
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

/// The `via GW dev DEV` part of an `ip -o route get` answer.
fn route_hops(got: &str) -> Vec<String> {
    let w: Vec<&str> = got.split_whitespace().collect();
    let mut out = Vec::new();
    for key in ["via", "dev"] {
        if let Some(i) = w.iter().position(|x| *x == key) {
            if let Some(v) = w.get(i + 1) {
                out.extend([key.to_string(), v.to_string()]);
            }
        }
    }
    out
}

/// One load by curl: the document, then every host's resources at once, six connections per
/// host name (`--parallel --parallel-max 6`); the first request to the last byte.
fn curl_load(topo: &Topology, srv: IpAddr, page: &Page) -> anyhow::Result<Load> {
    let tmp = topo.tmpdir();
    let base = |host: &str| {
        format!(
            "curl -sS --http1.1 --connect-timeout 30 --max-time 120 --resolve {host}:80:{srv} -w '{}'",
            page_load::CURL_WRITE_OUT
        )
    };
    let out = |host: &str| tmp.join(format!("curl-{host}.txt")).display().to_string();
    let mut each = Vec::new();
    for h in HOSTS {
        let list: String = page
            .resources
            .iter()
            .filter(|r| r.host == h)
            .map(|r| format!("url = \"{}\"\noutput = \"/dev/null\"\n", r.url()))
            .collect();
        let k = tmp.join(format!("curl-{h}.conf"));
        std::fs::write(&k, list)?;
        each.push(format!(
            "{} --parallel --parallel-immediate --parallel-max 6 -K {} > {}",
            base(h),
            k.display(),
            out(h)
        ));
    }
    let doc = format!(
        "{} -o /dev/null {} > {}",
        base(HOSTS[0]),
        page::URL,
        out("document")
    );
    let script = format!("{doc} && {{ {} & wait; }}", each.join(" & "));
    let t = Instant::now();
    topo.sh(Node::Pc, &script)?;
    let seconds = t.elapsed().as_secs_f64();
    let mut lines = String::new();
    for f in std::iter::once("document").chain(HOSTS) {
        lines += &std::fs::read_to_string(out(f))?;
    }
    page_load::from_curl(&lines, seconds, page).map_err(anyhow::Error::msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nginx_serves_each_host_from_its_own_root_with_timing_headers() {
        let c = nginx_conf(Path::new("/t/site"), Path::new("/t"));
        assert!(c.starts_with("daemon off;\n"));
        assert!(c.contains("root /t/site/$host;"));
        assert!(c.contains("pid /t/nginx.pid;"));
        assert!(c.contains("access_log /t/nginx-access.log timed;"));
        assert!(c.contains("log_format timed '$msec $connection $connection_requests $host"));
        assert!(c.contains("client_body_temp_path /t/nginx-client_body;"));
        assert!(c.contains("Timing-Allow-Origin \"*\"") && c.contains("gzip off;"));
        assert_eq!(c.matches('{').count(), c.matches('}').count());
    }

    #[test]
    fn the_route_to_the_other_end_host_is_read_from_route_get() {
        assert_eq!(
            route_hops("10.2.0.2 via 10.1.0.1 dev lan0 src 10.1.0.2 uid 0 \\    cache"),
            ["via", "10.1.0.1", "dev", "lan0"]
        );
        assert_eq!(
            route_hops("10.8.0.1 dev wg-pc src 10.8.0.2 uid 0"),
            ["dev", "wg-pc"]
        );
    }

    #[test]
    fn the_check_loads_with_curl_unless_told_otherwise() {
        assert_eq!(Loader::for_run(None, true), Loader::Curl);
        assert_eq!(Loader::for_run(None, false), Loader::Chromium);
        assert_eq!(
            Loader::for_run(Some(Loader::Chromium), true),
            Loader::Chromium
        );
    }
}

//! Tests of the median page's composition, document and contents (`suite::page`).

use super::*;

fn total(p: &Page, kind: Kind) -> (usize, usize) {
    let v: Vec<&Resource> = p.of(kind).collect();
    (v.len(), v.iter().map(|r| r.size).sum())
}

#[test]
fn the_composition_is_the_http_archive_median() {
    let p = Page::median();
    assert_eq!(p.requests(), 70);
    assert!(
        (2_300_000..=2_700_000).contains(&p.bytes()),
        "{}",
        p.bytes()
    );
    assert_eq!(total(&p, Kind::Image), (18, 1_000_000));
    assert_eq!(total(&p, Kind::Script), (24, 600_000));
    assert_eq!(total(&p, Kind::Css), (7, 80_000));
    assert_eq!(total(&p, Kind::Font), (4, 130_000));
    assert_eq!(p.html().len(), HTML_BYTES);
    // Sizes spread as real ones do, none tiny.
    let imgs: Vec<usize> = p.of(Kind::Image).map(|r| r.size).collect();
    let (lo, hi) = (imgs.iter().min().unwrap(), imgs.iter().max().unwrap());
    assert!(*lo >= 10_000 && hi / lo >= 2, "{imgs:?}");
}

#[test]
fn the_page_is_spread_over_every_host_and_never_changes() {
    let p = Page::median();
    for h in HOSTS {
        assert!(p.resources.iter().any(|r| r.host == h), "{h} unused");
    }
    let mut urls: Vec<String> = p.resources.iter().map(Resource::url).collect();
    urls.sort();
    urls.dedup();
    assert_eq!(urls.len(), p.resources.len(), "duplicate URLs");
    assert_eq!(p, Page::median());
    assert_eq!(p.html(), Page::median().html());
    let r = &p.resources[5];
    assert_eq!(p.body(r), Page::median().body(r));
}

#[test]
fn the_document_references_every_resource_once() {
    let p = Page::median();
    let html = String::from_utf8(p.html()).unwrap();
    assert_eq!(html.matches("http://").count(), p.resources.len());
    for r in &p.resources {
        let quoted = format!("\"{}\"", r.url());
        assert_eq!(html.matches(&quoted).count(), 1, "{}", r.url());
    }
    assert!(html.starts_with("<!doctype html>") && html.ends_with("</html>\n"));
    // A third of the scripts block the parser, the rest are defer or async.
    assert_eq!(html.matches("<script src=").count(), 8);
    assert_eq!(html.matches("<script defer").count(), 8);
    assert_eq!(html.matches("<script async").count(), 8);
}

/// Walks a GIF's blocks; the number of bytes up to and including the trailer.
fn gif_len(b: &[u8]) -> usize {
    assert_eq!(&b[..6], b"GIF89a");
    let mut i = 13 + 3 * (2 << (b[10] & 7)); // header, screen descriptor, colour table
    loop {
        match b[i] {
            0x21 => i += 2,  // extension: label, then sub-blocks
            0x2c => i += 11, // image descriptor, then the LZW code size, then sub-blocks
            0x3b => return i + 1,
            x => panic!("unexpected block {x:#x} at {i}"),
        }
        while b[i] != 0 {
            i += 1 + b[i] as usize;
        }
        i += 1;
    }
}

#[test]
fn every_body_has_its_size_and_images_and_fonts_do_not_compress() {
    let p = Page::median();
    for r in &p.resources {
        let b = p.body(r);
        assert_eq!(b.len(), r.size, "{}", r.path);
        match r.kind {
            Kind::Image | Kind::Font => {
                if r.kind == Kind::Image {
                    assert_eq!(gif_len(&b), b.len(), "{}", r.path);
                }
                let mut seen = [false; 256];
                b.iter().for_each(|&x| seen[x as usize] = true);
                assert!(seen.iter().filter(|s| **s).count() > 250, "{}", r.path);
            }
            Kind::Data => {
                let v: serde_json::Value = serde_json::from_slice(&b).expect(&r.path);
                assert!(v["items"].as_array().unwrap().len() > 10, "{}", r.path);
            }
            Kind::Css | Kind::Script | Kind::Html => {
                let t = String::from_utf8(b).unwrap();
                assert!(t.lines().count() > 10, "{}", r.path);
            }
        }
    }
}

#[test]
fn gifs_of_every_awkward_size_are_valid() {
    let mut rng = StdRng::seed_from_u64(1);
    for size in (40..700).chain([38 + 257, 38 + 513, 38 + 256]) {
        let b = gif(&mut rng, size);
        assert_eq!(b.len(), size);
        assert_eq!(gif_len(&b), size);
    }
}

#[test]
fn the_first_stylesheet_declares_the_preloaded_fonts() {
    let p = Page::median();
    let css0 = p.resources.iter().find(|r| r.path == "/css/0.css").unwrap();
    let css = String::from_utf8(p.body(css0)).unwrap();
    for f in p.of(Kind::Font) {
        assert!(css.contains(&format!("url({})", f.url())), "{}", f.url());
    }
}

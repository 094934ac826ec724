//! The web application's page (pure): a deterministic page with the HTTP Archive median
//! composition (70 requests, about 2.4 MB: images 1.0 MB in 18, JS 0.6 MB in 24, CSS 80 KB,
//! fonts 130 KB, HTML 20 KB, the rest data fetches) spread over four host names, its HTML and
//! every resource's bytes. `bench::web` writes it out, serves it with nginx and loads it.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The host names the page uses (all mapped to the server); the document is on the first.
pub const HOSTS: [&str; 4] = [
    "www.example",
    "static.example",
    "img.example",
    "cdn.example",
];

/// The document's URL.
pub const URL: &str = "http://www.example/";

/// What a resource is (the HTTP Archive's content types).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Html,
    Image,
    Script,
    Css,
    Font,
    /// JSON fetched early (`<link rel=preload as=fetch>`): the archive's "other".
    Data,
}

/// One class of the composition: how many, how many bytes in all, where.
struct Class {
    kind: Kind,
    count: usize,
    bytes: usize,
    host: &'static str,
    dir: &'static str,
    ext: &'static str,
}

/// The median page (HTTP Archive, 2023–2024 desktop): 70 requests, 2.43 MB.
const CLASSES: [Class; 5] = [
    Class {
        kind: Kind::Image,
        count: 18,
        bytes: 1_000_000,
        host: "img.example",
        dir: "img",
        ext: "gif",
    },
    Class {
        kind: Kind::Script,
        count: 24,
        bytes: 600_000,
        host: "cdn.example",
        dir: "js",
        ext: "js",
    },
    Class {
        kind: Kind::Css,
        count: 7,
        bytes: 80_000,
        host: "static.example",
        dir: "css",
        ext: "css",
    },
    Class {
        kind: Kind::Font,
        count: 4,
        bytes: 130_000,
        host: "static.example",
        dir: "font",
        ext: "woff2",
    },
    Class {
        kind: Kind::Data,
        count: 16,
        bytes: 600_000,
        host: "www.example",
        dir: "data",
        ext: "json",
    },
];

/// The document's size, bytes.
pub const HTML_BYTES: usize = 20_000;

/// The seed of the page's composition and contents (the page never changes).
const SEED: u64 = 0x57a2_9e9b;

/// The smallest resource (room for a GIF's fixed parts).
const MIN_BYTES: usize = 64;

/// A subresource of the page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    pub kind: Kind,
    pub host: &'static str,
    /// Absolute path on its host, e.g. `/img/3.gif`.
    pub path: String,
    pub size: usize,
}

impl Resource {
    pub fn url(&self) -> String {
        format!("http://{}{}", self.host, self.path)
    }
}

/// The page: the document and its subresources.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    pub resources: Vec<Resource>,
}

impl Page {
    /// The median page (always the same).
    pub fn median() -> Page {
        let mut rng = StdRng::seed_from_u64(SEED);
        let mut resources = Vec::new();
        for c in &CLASSES {
            for (i, size) in split(&mut rng, c.bytes, c.count).into_iter().enumerate() {
                resources.push(Resource {
                    kind: c.kind,
                    host: c.host,
                    path: format!("/{}/{i}.{}", c.dir, c.ext),
                    size,
                });
            }
        }
        Page { resources }
    }

    /// Requests of one load: the document and every subresource.
    pub fn requests(&self) -> usize {
        1 + self.resources.len()
    }

    /// Body bytes of one load.
    pub fn bytes(&self) -> usize {
        HTML_BYTES + self.resources.iter().map(|r| r.size).sum::<usize>()
    }

    fn of(&self, kind: Kind) -> impl Iterator<Item = &Resource> {
        self.resources.iter().filter(move |r| r.kind == kind)
    }

    /// The document: stylesheets, font and data preloads and a third of the scripts in the
    /// head (render-blocking, as on most pages), the images in the body, a third of the
    /// scripts `defer`, a third `async`; text filler up to [`HTML_BYTES`].
    pub fn html(&self) -> Vec<u8> {
        let mut head = String::from(
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n\
             <title>StarPEP bench: the median page</title>\n<link rel=\"icon\" href=\"data:,\">\n",
        );
        for r in self.of(Kind::Css) {
            head += &format!("<link rel=\"stylesheet\" href=\"{}\">\n", r.url());
        }
        for r in self.of(Kind::Font) {
            head += &format!(
                "<link rel=\"preload\" as=\"font\" type=\"font/woff2\" crossorigin href=\"{}\">\n",
                r.url()
            );
        }
        for r in self.of(Kind::Data) {
            head += &format!(
                "<link rel=\"preload\" as=\"fetch\" crossorigin href=\"{}\">\n",
                r.url()
            );
        }
        let scripts: Vec<&Resource> = self.of(Kind::Script).collect();
        let third = scripts.len() / 3;
        for r in &scripts[..third] {
            head += &format!("<script src=\"{}\"></script>\n", r.url());
        }
        head += "</head><body>\n";
        let mut body = String::new();
        for (i, r) in self.of(Kind::Image).enumerate() {
            body += &format!(
                "<h2 class=\"f{}\">Section {i}</h2>\n<img src=\"{}\" width=\"640\" height=\"360\" alt=\"\">\n",
                i % 4,
                r.url()
            );
        }
        for (i, r) in scripts[third..].iter().enumerate() {
            let how = if i < third { "defer" } else { "async" };
            body += &format!("<script {how} src=\"{}\"></script>\n", r.url());
        }
        let tail = "</body></html>\n";
        let fill = HTML_BYTES.saturating_sub(head.len() + body.len() + tail.len() + 8);
        let mut rng = StdRng::seed_from_u64(SEED ^ 1);
        let text = format!("<p>{}</p>\n", words(&mut rng, fill));
        format!("{head}{text}{body}{tail}").into_bytes()
    }

    /// A subresource's bytes: images are valid GIFs carrying random bytes, fonts random bytes
    /// (neither compresses), scripts, stylesheets and data valid text.
    pub fn body(&self, r: &Resource) -> Vec<u8> {
        let mut rng = StdRng::seed_from_u64(SEED ^ hash(&r.path));
        let mut b = match r.kind {
            Kind::Image => return gif(&mut rng, r.size),
            Kind::Html => return self.html(),
            Kind::Font => {
                let mut v = vec![0u8; r.size];
                rng.fill(&mut v[..]);
                return v;
            }
            Kind::Css if r.path.ends_with("/0.css") => self.font_faces(),
            Kind::Css => String::new(),
            Kind::Script => format!("/* {} */\n", r.path),
            Kind::Data => "{\"items\":[".to_string(),
        };
        let close = match r.kind {
            Kind::Data => "\"\"]}\n",
            _ => "\n",
        };
        let mut i = 0;
        while b.len() + close.len() < r.size {
            let room = r.size - close.len() - b.len();
            let w = words(&mut rng, 60).replace(' ', "_");
            let item = match r.kind {
                Kind::Css => format!(
                    ".c{i}-{w}{{margin:{}px;color:#{:06x}}}\n",
                    i % 17,
                    rng.gen::<u32>() >> 8
                ),
                Kind::Script => format!("var v{i}=\"{w}\";\n"),
                _ => format!("\"{w}\","),
            };
            b += if item.len() <= room { &item } else { " " };
            i += 1;
        }
        b += close;
        b.into_bytes()
    }

    /// `@font-face` rules for the preloaded fonts (first stylesheet); the headings use them.
    fn font_faces(&self) -> String {
        self.of(Kind::Font)
            .enumerate()
            .map(|(i, r)| {
                format!(
                    "@font-face{{font-family:f{i};src:url({}) format(\"woff2\")}}\n.f{i}{{font-family:f{i},sans-serif}}\n",
                    r.url()
                )
            })
            .collect()
    }
}

/// `total` split into `n` sizes of a realistic spread (largest about 7 × the smallest).
fn split(rng: &mut StdRng, total: usize, n: usize) -> Vec<usize> {
    let w: Vec<f64> = (0..n).map(|_| rng.gen_range(0.0..2.0f64).exp()).collect();
    let sum: f64 = w.iter().sum();
    let mut sizes: Vec<usize> = w
        .iter()
        .map(|x| ((x / sum * total as f64) as usize).max(MIN_BYTES))
        .collect();
    let assigned: usize = sizes.iter().sum();
    sizes[0] = (sizes[0] + total).saturating_sub(assigned).max(MIN_BYTES);
    sizes
}

/// Lowercase pseudo-words, `len` bytes.
fn words(rng: &mut StdRng, len: usize) -> String {
    let mut s = String::with_capacity(len);
    while s.len() < len {
        s.push(if rng.gen_ratio(1, 7) {
            ' '
        } else {
            rng.gen_range(b'a'..=b'z') as char
        });
    }
    s
}

/// A 1×1 GIF of exactly `size` bytes whose comment extension carries random bytes.
fn gif(rng: &mut StdRng, size: usize) -> Vec<u8> {
    const HEAD: [u8; 19] = [
        b'G', b'I', b'F', b'8', b'9', b'a', 1, 0, 1, 0, 0x80, 0, 0, 0xff, 0xff, 0xff, 0, 0, 0,
    ];
    // Image descriptor (1×1 at 0,0), LZW minimum code size 2, one data block, trailer.
    const TAIL: [u8; 16] = [0x2c, 0, 0, 0, 0, 1, 0, 1, 0, 0, 2, 2, 0x44, 0x01, 0, 0x3b];
    let size = size.max(HEAD.len() + TAIL.len() + 5);
    let mut v = HEAD.to_vec();
    v.extend([0x21, 0xfe]);
    // The comment's sub-blocks (length byte + up to 255 bytes) fill `left`; a lone byte
    // cannot be a block, so a 256-byte block gives one byte to the last.
    let mut left = size - HEAD.len() - TAIL.len() - 3;
    while left > 0 {
        let n = match left {
            257 => 254,
            l => (l - 1).min(255),
        };
        v.push(n as u8);
        let at = v.len();
        v.resize(at + n, 0);
        rng.fill(&mut v[at..]);
        left -= n + 1;
    }
    v.push(0);
    v.extend(TAIL);
    v
}

/// A stable hash of a path (FNV-1a), to seed its contents.
fn hash(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

#[cfg(test)]
#[path = "page_tests.rs"]
mod tests;

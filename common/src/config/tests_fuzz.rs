//! Deterministic mutation test of `parse` (the stable-toolchain stand-in for `fuzz/config_parse`,
//! with its check, [`check_parse`]): thousands of mutated example files must never panic, and
//! every error must point at a line of the input.

use super::tests::configs_dir;
use super::*;

/// xorshift64*: a fixed, dependency-free pseudo-random sequence.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const PEP_EXAMPLE: &str = "[PEP]\nMode = split\nCongestion = cubic\nLinkRate = 10mbit\n\
    LinkRtt = 600ms\nBypass = 22, 5060-5070, 192.0.2.0/24\nSndBuf = 4M\nIdleTimeout = 1h\n";

/// Interesting bytes for insertions: syntax characters, digits, key material, UTF-8.
const ALPHABET: &[&str] = &[
    "[",
    "]",
    "=",
    "#",
    ",",
    ":",
    "/",
    ".",
    "-",
    " ",
    "\n",
    "\r\n",
    "\t",
    "0",
    "9",
    "65536",
    "A",
    "z",
    "+",
    "ä",
    "[Peer]\n",
    "[PEP]\n",
    "[Interface]\n",
    "::",
    "Mode = starpep\n",
    "\u{0}",
];

fn mutate(rng: &mut Rng, input: &str) -> String {
    let mut s = input.to_string();
    for _ in 0..1 + rng.below(4) {
        let chars: Vec<char> = s.chars().collect();
        let at = rng.below(chars.len() + 1);
        let head: String = chars[..at].iter().collect();
        let tail: String = chars[at..].iter().collect();
        s = match rng.below(6) {
            0 => format!(
                "{head}{}",
                tail.chars().skip(1 + rng.below(8)).collect::<String>()
            ),
            1 => format!("{head}{}{tail}", ALPHABET[rng.below(ALPHABET.len())]),
            2 => {
                let lines: Vec<&str> = s.lines().collect();
                let l = lines.get(rng.below(lines.len())).copied().unwrap_or("");
                format!("{head}{l}\n{tail}")
            }
            3 => {
                let mut lines: Vec<&str> = s.lines().collect();
                if lines.len() > 1 {
                    let (a, b) = (rng.below(lines.len()), rng.below(lines.len()));
                    lines.swap(a, b);
                }
                lines.join("\n")
            }
            4 => head,
            _ => format!("{head}{}{tail}", char::from(rng.below(128) as u8)),
        };
    }
    s
}

#[test]
fn mutated_examples_never_panic_and_errors_point_into_the_file() {
    let box_conf = std::fs::read_to_string(configs_dir().join("box.conf")).unwrap();
    let pop_conf = std::fs::read_to_string(configs_dir().join("pop.conf")).unwrap();
    let seeds = [
        box_conf.clone(),
        pop_conf,
        format!("{box_conf}{PEP_EXAMPLE}"),
    ];
    let mut rng = Rng(0x5eed_cafe_f00d_d00d);
    let (mut ok, mut bad) = (0, 0);
    for i in 0..6000 {
        let text = mutate(&mut rng, &seeds[i % seeds.len()]);
        if check_parse("m.conf", &text) {
            ok += 1;
        } else {
            bad += 1;
        }
    }
    // Both outcomes must occur, or the mutations are not exercising the parser.
    assert!(ok > 100 && bad > 100, "ok {ok}, bad {bad}");
}

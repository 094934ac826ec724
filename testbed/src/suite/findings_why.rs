//! Why a finding of the study is not reproduced, read from the same cells (pure): the figures
//! that show what differs from the study's bed, stated next to the finding in the report.

use super::findings::{lossy_leo, OVPN_TCP_PEP_A};
use super::stats::{links, median, Pivot};

/// Where `ovpn-tcp+pepA` is not the slowest: its PEP splits OpenVPN's own TCP connection, so
/// the satellite segment's start and loss recovery are the PEP's, not end to end; compared with
/// `ovpn-tcp` without that PEP on the same link.
pub fn worst(p30: &Pivot) -> Option<String> {
    let notes: Vec<String> = links(p30)
        .into_iter()
        .filter_map(|link| {
            let a = median(p30, OVPN_TCP_PEP_A, &link)?;
            let t = median(p30, "ovpn-tcp", &link)?;
            (a <= t).then(|| {
                format!(
                    "{link}: `ovpn-tcp+pepA` {a:.1} s vs `ovpn-tcp` {t:.1} s ({:.2}×)",
                    a / t
                )
            })
        })
        .collect();
    (!notes.is_empty()).then(|| {
        format!(
            "the PEP outside the tunnel splits OpenVPN's own TCP connection, so the satellite \
             segment's start and loss recovery happen at the PEP (BBR), not end to end through \
             the tunnel, and TCP-in-TCP costs less than it gains: {}",
            notes.join("; ")
        )
    })
}

/// Where position B does not beat position A at 30 MB: the 1 MB times (the start dominates)
/// of the same setups on the same link.
pub fn position_b(p30: &Pivot, p1: &Pivot, b: &[&str], a: &[&str]) -> Option<String> {
    let best = |p: &Pivot, link: &str, set: &[&str]| {
        set.iter()
            .filter_map(|s| median(p, s, link))
            .min_by(f64::total_cmp)
    };
    let notes: Vec<String> = links(p30)
        .into_iter()
        .filter_map(|link| {
            let (b30, a30) = (best(p30, &link, b)?, best(p30, &link, a)?);
            if b30 < a30 {
                return None;
            }
            let (b1, a1) = (best(p1, &link, b)?, best(p1, &link, a)?);
            Some(format!(
                "{link}: 30 MB B {b30:.1} s vs A {a30:.1} s, 1 MB B {b1:.2} s vs A {a1:.2} s \
                 ({:.2}×)",
                b1 / a1
            ))
        })
        .collect();
    (!notes.is_empty()).then(|| {
        format!(
            "on a clean link a 30 MB transfer spends nearly all its time at the link's rate \
             once either setup has started, so the two positions end within a few percent; \
             where the start matters (1 MB) position B is ahead: {}",
            notes.join("; ")
        )
    })
}

/// Where the best setup cuts far more than 30 %: how much the loss alone slows end-to-end
/// CUBIC through `wg` on this bed, against the same link without loss.
pub fn lossy_cut(p30: &Pivot) -> Option<String> {
    let notes: Vec<String> = links(p30)
        .into_iter()
        .filter(|l| lossy_leo(l))
        .filter_map(|link| {
            let clean = &link[..link.find("-loss")?];
            let lossy = median(p30, "wg", &link)?;
            let base = median(p30, "wg", clean)?;
            Some(format!(
                "`wg` {lossy:.1} s on {link} vs {base:.1} s on {clean} ({:.1}× slower)",
                lossy / base
            ))
        })
        .collect();
    (!notes.is_empty()).then(|| {
        format!(
            "this bed's loss (1 % random, both ways) slows end-to-end CUBIC through the tunnel \
             far more than the study's lossy LEO did, so a setup that recovers the losses at \
             the PEP cuts far more than the study's 30 %: {}",
            notes.join("; ")
        )
    })
}

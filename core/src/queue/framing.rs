//! Curator's item framing (`ItemSerializer`), byte for byte: a 4-byte big-endian version
//! `0x00010001`, then per message the opcode `0x01`, a 4-byte big-endian length and the bytes,
//! and finally the opcode `0x02`. One node may carry several messages (Curator's `putMulti`).

use crate::{Error, Result};

const VERSION: u32 = 0x0001_0001;
const ITEM: u8 = 0x01;
const EOF: u8 = 0x02;

/// Frames `messages` into one node's data.
pub(crate) fn encode<'a>(messages: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = VERSION.to_be_bytes().to_vec();
    for m in messages {
        out.push(ITEM);
        out.extend_from_slice(&(m.len() as u32).to_be_bytes());
        out.extend_from_slice(m);
    }
    out.push(EOF);
    out
}

/// The messages of one node's data; `CorruptedData` naming `node` for anything else.
pub(crate) fn decode(node: &str, data: &[u8]) -> Result<Vec<Vec<u8>>> {
    let bad = |why: String| Error::CorruptedData(format!("queue item {node}: {why}").into());
    let mut rest = data;
    let mut take = |n: usize| -> Result<&[u8]> {
        if rest.len() < n {
            return Err(bad(format!(
                "truncated ({} bytes, not Curator's item framing)",
                data.len()
            )));
        }
        let (head, tail) = rest.split_at(n);
        rest = tail;
        Ok(head)
    };
    let version = u32::from_be_bytes(take(4)?.try_into().unwrap_or_default());
    if version != VERSION {
        return Err(bad(format!(
            "framing version {version:#x}, expected {VERSION:#x} (Curator's ItemSerializer)"
        )));
    }
    let mut messages = Vec::new();
    loop {
        match take(1)?[0] {
            EOF => return Ok(messages),
            ITEM => {
                let len = i32::from_be_bytes(take(4)?.try_into().unwrap_or_default());
                if len < 0 {
                    return Err(bad(format!("negative message size {len}")));
                }
                messages.push(take(len as usize)?.to_vec());
            }
            op => return Err(bad(format!("opcode {op:#x}, expected 0x1 or 0x2"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_curators_bytes() {
        let framed = encode([b"hi".as_slice()]);
        assert_eq!(framed, [0, 1, 0, 1, 1, 0, 0, 0, 2, b'h', b'i', 2]);
        assert_eq!(decode("n", &framed).unwrap(), vec![b"hi".to_vec()]);
        let two = encode([b"".as_slice(), b"x".as_slice()]);
        assert_eq!(decode("n", &two).unwrap(), vec![vec![], b"x".to_vec()]);
        assert_eq!(decode("n", &encode([])).unwrap(), Vec::<Vec<u8>>::new());
    }

    #[test]
    fn refuses_what_is_not_framed() {
        for bad in [
            &b""[..],
            &b"plain text"[..],
            &[0, 1, 0, 1, 1, 0, 0, 0, 9, b'x'][..],
            &[0, 1, 0, 1, 7][..],
            &[0, 1, 0, 1, 1, 0xff, 0xff, 0xff, 0xff, 2][..],
            &[0, 1, 0, 1][..],
        ] {
            let e = decode("/q/queue-1", bad).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::CorruptedData, "{bad:?}");
        }
    }
}

//! Compressed node data, byte for byte as Curator's default `GzipCompressionProvider` writes it
//! (`create().compressed()`, `setData().compressed()`, `getData().decompressed()`).
//!
//! Curator writes its own GZIP framing around a raw DEFLATE stream: the 10-byte header
//! `1f 8b 08 00 00 00 00 00 00 ff` (no flags, no time, no extra flags; OS byte 0xff = "unknown",
//! what the JDK writes since JDK 16, JDK-8244706), the DEFLATE stream of zlib's default level
//! (6) — the JDK's `Deflater` is zlib, so is ours — and the trailer: CRC-32 and length, little
//! endian. Empty data is the fixed 20 bytes of `COMPRESSED_EMPTY_BYTES`. Reading accepts any
//! single-member GZIP (Curator's own reader skips FEXTRA, FNAME, FCOMMENT, FHCRC), and refuses
//! anything else with `CorruptedData`: bad magic, bad method, a truncated stream, trailing
//! bytes, a CRC or length that does not match.

use std::io::Write;

use flate2::write::DeflateEncoder;
use flate2::{Compression, Crc, Decompress, FlushDecompress, Status};

use crate::{Error, Result};

/// Curator's header (`GzipCompressionProvider.GZIP_HEADER` on JDK 16+).
const HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];

const FHCRC: u8 = 1 << 1;
const FEXTRA: u8 = 1 << 2;
const FNAME: u8 = 1 << 3;
const FCOMMENT: u8 = 1 << 4;

/// The largest data we inflate (ZooKeeper's default jute.maxbuffer is 1 MiB of compressed
/// data; 256 MiB of plain data stops a "zip bomb" from taking the process down).
const MAX_PLAIN: usize = 256 << 20;

/// `data` compressed as Curator's GZIP provider does.
pub fn gzip(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER.len() + data.len() / 2 + 16);
    out.extend_from_slice(&HEADER);
    let mut enc = DeflateEncoder::new(out, Compression::new(6));
    // Writing into a Vec cannot fail.
    let _ = enc.write_all(data);
    let mut out = enc.finish().unwrap_or_default();
    let mut crc = Crc::new();
    crc.update(data);
    out.extend_from_slice(&crc.sum().to_le_bytes());
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out
}

fn corrupted(path: &str, why: &str) -> Error {
    Error::CorruptedData(
        format!("decompress {path}: {why} (was it written with Curator's .compressed() or compressed=true?)")
            .into(),
    )
}

/// The plain data of GZIP-compressed `data` (read from `path`, for messages).
pub fn gunzip(path: &str, data: &[u8]) -> Result<Vec<u8>> {
    let start = header_len(data).ok_or_else(|| corrupted(path, "not GZIP data"))?;
    if data.len() < start + 2 + 8 {
        return Err(corrupted(path, "too short"));
    }
    let body = &data[start..data.len() - 8];
    let mut inflate = Decompress::new(false);
    let mut out = Vec::with_capacity((body.len() * 3).min(MAX_PLAIN));
    loop {
        let consumed = inflate.total_in() as usize;
        if out.len() == out.capacity() {
            if out.len() >= MAX_PLAIN {
                return Err(corrupted(path, "more than 256 MiB of plain data"));
            }
            out.reserve(out.len().max(64));
        }
        let status = inflate
            .decompress_vec(&body[consumed..], &mut out, FlushDecompress::Finish)
            .map_err(|e| corrupted(path, &format!("bad DEFLATE stream ({e})")))?;
        match status {
            Status::StreamEnd => break,
            Status::Ok => {}
            Status::BufError if out.len() < out.capacity() => {
                return Err(corrupted(path, "truncated DEFLATE stream"))
            }
            Status::BufError => {}
        }
    }
    if inflate.total_in() as usize != body.len() {
        return Err(corrupted(path, "bytes after the GZIP member"));
    }
    let trailer = &data[data.len() - 8..];
    let mut crc = Crc::new();
    crc.update(&out);
    let want_crc = u32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
    let want_len = u32::from_le_bytes([trailer[4], trailer[5], trailer[6], trailer[7]]);
    if crc.sum() != want_crc || want_len != out.len() as u32 {
        return Err(corrupted(path, "the GZIP trailer does not match the data"));
    }
    Ok(out)
}

/// The length of a GZIP header at the start of `data`, or `None` if it is not one.
fn header_len(data: &[u8]) -> Option<usize> {
    if data.len() < 10 || data[0] != 0x1f || data[1] != 0x8b || data[2] != 8 {
        return None;
    }
    let flags = data[3];
    let mut at = 10;
    if flags & FEXTRA != 0 {
        let n = u16::from_le_bytes([*data.get(at)?, *data.get(at + 1)?]) as usize;
        at += 2 + n;
    }
    for flag in [FNAME, FCOMMENT] {
        if flags & flag != 0 {
            at += data.get(at..)?.iter().position(|b| *b == 0)? + 1;
        }
    }
    if flags & FHCRC != 0 {
        at += 2;
    }
    (at <= data.len()).then_some(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `GzipCompressionProvider.COMPRESSED_EMPTY_BYTES` with the JDK 16+ OS byte.
    const CURATOR_EMPTY: [u8; 20] = [
        31, 139, 8, 0, 0, 0, 0, 0, 0, 0xff, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    ];

    #[test]
    fn empty_data_is_curators_fixed_bytes() {
        assert_eq!(gzip(b""), CURATOR_EMPTY);
        assert_eq!(gunzip("/e", &CURATOR_EMPTY).unwrap(), b"");
    }

    #[test]
    fn round_trips_and_starts_with_curators_header() {
        for data in [&b"x"[..], b"hello hello hello hello", &[7u8; 100_000][..]] {
            let z = gzip(data);
            assert_eq!(z[..10], HEADER);
            assert_eq!(gunzip("/d", &z).unwrap(), data);
        }
    }

    /// The JDK's `Deflater(DEFAULT_COMPRESSION, nowrap)` output for this text (what Curator's
    /// `doCompress` puts between its header and trailer), captured once with OpenJDK 17.
    #[test]
    fn compressed_bytes_are_the_jdks() {
        let data = b"zkrecipes compresses like Curator, zkrecipes compresses like Curator";
        let jdk_deflate: [u8; 39] = [
            171, 202, 46, 74, 77, 206, 44, 72, 45, 86, 72, 206, 207, 45, 40, 74, 45, 46, 6, 50,
            115, 50, 179, 83, 21, 156, 75, 139, 18, 75, 242, 139, 116, 20, 170, 8, 41, 1, 0,
        ];
        let mut want = HEADER.to_vec();
        want.extend_from_slice(&jdk_deflate);
        want.extend_from_slice(&0x8017_c077u32.to_le_bytes());
        want.extend_from_slice(&(data.len() as u32).to_le_bytes());
        assert_eq!(gzip(data), want);
    }

    #[test]
    fn bad_input_is_corrupted_data() {
        let good = gzip(b"some data to compress");
        let mut bad_crc = good.clone();
        let n = bad_crc.len();
        bad_crc[n - 8] ^= 1;
        let mut trailing = good.clone();
        trailing.insert(n - 8, 0);
        for bad in [
            &b""[..],
            b"plain text, not gzip",
            &good[..good.len() - 3],
            &bad_crc,
            &trailing,
        ] {
            assert!(
                matches!(gunzip("/b", bad), Err(Error::CorruptedData(_))),
                "{bad:?}"
            );
        }
    }
}

//! Images for `read`: detected by magic bytes, converted to a format every provider accepts,
//! and shrunk to fit 2000×2000 pixels and 4.5 MB of base64 (DECISIONS §22.43).

use std::io::Cursor;

use base64::Engine as _;
use image::{DynamicImage, GenericImageView, ImageFormat};

/// Largest width/height sent to the model.
pub const MAX_DIMENSION: u32 = 2000;
/// Largest base64 payload sent to the model.
pub const MAX_BASE64_BYTES: usize = 4_500_000;

/// The image MIME type of a file's first bytes, or `None` for anything else (animated PNGs
/// included: they are read as files, not pictures).
pub fn sniff(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        (!is_animated_png(head)).then_some("image/png")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else if head.starts_with(b"BM") && head.len() >= 14 {
        Some("image/bmp")
    } else {
        None
    }
}

/// An `acTL` chunk before the first `IDAT` marks an animated PNG.
fn is_animated_png(bytes: &[u8]) -> bool {
    let mut pos = 8;
    while pos + 8 <= bytes.len() {
        let len = u32::from_be_bytes([bytes[pos], bytes[pos + 1], bytes[pos + 2], bytes[pos + 3]]);
        let kind = &bytes[pos + 4..pos + 8];
        if kind == b"acTL" {
            return true;
        }
        if kind == b"IDAT" {
            return false;
        }
        pos = pos.saturating_add(12).saturating_add(len as usize);
    }
    false
}

/// An image ready to send.
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared {
    /// The image, base64.
    pub data: String,
    /// Its MIME type after any conversion.
    pub mime_type: &'static str,
    /// Lines for the text block: conversions and the coordinate scale of a resize.
    pub hints: Vec<String>,
}

/// Why an image is left out (the text the model sees instead).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Omitted(pub &'static str);

const CANNOT_CONVERT: &str =
    "[Image omitted: could not be converted to a supported inline image format.]";
const CANNOT_SHRINK: &str =
    "[Image omitted: could not be resized below the inline image size limit.]";

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn b64_len(n: usize) -> usize {
    n.div_ceil(3) * 4
}

fn encode(img: &DynamicImage, format: ImageFormat, quality: u8) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    match format {
        ImageFormat::Jpeg => {
            let rgb = img.to_rgb8();
            let enc = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, quality);
            rgb.write_with_encoder(enc).ok()?;
        }
        _ => img.write_to(&mut Cursor::new(&mut out), format).ok()?,
    }
    Some(out)
}

/// Converts and shrinks `bytes` of type `mime` as needed. `resize` is the `images.autoResize`
/// setting.
pub fn prepare(bytes: &[u8], mime: &'static str, resize: bool) -> Result<Prepared, Omitted> {
    let mut hints = Vec::new();
    let passthrough = mime != "image/bmp";
    if !resize {
        if passthrough {
            return Ok(Prepared {
                data: b64(bytes),
                mime_type: mime,
                hints,
            });
        }
        let img = image::load_from_memory(bytes).map_err(|_| Omitted(CANNOT_CONVERT))?;
        let png = encode(&img, ImageFormat::Png, 0).ok_or(Omitted(CANNOT_CONVERT))?;
        hints.push("[Image converted from image/bmp to image/png.]".to_owned());
        return Ok(Prepared {
            data: b64(&png),
            mime_type: "image/png",
            hints,
        });
    }
    let img = image::load_from_memory(bytes).map_err(|_| Omitted(CANNOT_CONVERT))?;
    let (w, h) = img.dimensions();
    if passthrough
        && w <= MAX_DIMENSION
        && h <= MAX_DIMENSION
        && b64_len(bytes.len()) <= MAX_BASE64_BYTES
    {
        return Ok(Prepared {
            data: b64(bytes),
            mime_type: mime,
            hints,
        });
    }
    let mut target = if w > MAX_DIMENSION || h > MAX_DIMENSION {
        let scale = f64::from(MAX_DIMENSION) / f64::from(w.max(h));
        (
            ((f64::from(w) * scale).round() as u32).max(1),
            ((f64::from(h) * scale).round() as u32).max(1),
        )
    } else {
        (w, h)
    };
    for _ in 0..12 {
        let sized = if target == (w, h) {
            img.clone()
        } else {
            img.resize_exact(target.0, target.1, image::imageops::FilterType::Lanczos3)
        };
        let mut best: Option<(Vec<u8>, &'static str)> = None;
        fn consider(
            best: &mut Option<(Vec<u8>, &'static str)>,
            bytes: Option<Vec<u8>>,
            m: &'static str,
        ) {
            if let Some(b) = bytes {
                if best.as_ref().is_none_or(|(cur, _)| b.len() < cur.len()) {
                    *best = Some((b, m));
                }
            }
        }
        consider(&mut best, encode(&sized, ImageFormat::Png, 0), "image/png");
        consider(
            &mut best,
            encode(&sized, ImageFormat::Jpeg, 80),
            "image/jpeg",
        );
        for q in [85u8, 70, 55, 40] {
            if best
                .as_ref()
                .is_some_and(|(b, _)| b64_len(b.len()) <= MAX_BASE64_BYTES)
            {
                break;
            }
            consider(
                &mut best,
                encode(&sized, ImageFormat::Jpeg, q),
                "image/jpeg",
            );
        }
        if let Some((bytes, out_mime)) = best {
            if b64_len(bytes.len()) <= MAX_BASE64_BYTES {
                if mime == "image/bmp" || out_mime != mime {
                    hints.push(format!("[Image converted from {mime} to {out_mime}.]"));
                }
                if target != (w, h) {
                    hints.push(format!(
                        "[Image: original {w}x{h}, displayed at {}x{}. Multiply coordinates by {:.2} to map to original image.]",
                        target.0,
                        target.1,
                        f64::from(w) / f64::from(target.0)
                    ));
                }
                return Ok(Prepared {
                    data: b64(&bytes),
                    mime_type: out_mime,
                    hints,
                });
            }
        }
        target = (
            ((target.0 as f64) * 0.75) as u32,
            ((target.1 as f64) * 0.75) as u32,
        );
        if target.0 == 0 || target.1 == 0 {
            break;
        }
    }
    Err(Omitted(CANNOT_SHRINK))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(w: u32, h: u32) -> Vec<u8> {
        let img = DynamicImage::new_rgb8(w, h);
        encode(&img, ImageFormat::Png, 0).unwrap()
    }

    #[test]
    fn magic_bytes_decide_the_type() {
        assert_eq!(sniff(&png(2, 2)), Some("image/png"));
        assert_eq!(sniff(&[0xFF, 0xD8, 0xFF, 0xE0]), Some("image/jpeg"));
        assert_eq!(sniff(b"GIF89a...."), Some("image/gif"));
        assert_eq!(sniff(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(sniff(b"plain text file"), None);
        let mut apng = b"\x89PNG\r\n\x1a\n".to_vec();
        apng.extend_from_slice(&[0, 0, 0, 8]);
        apng.extend_from_slice(b"acTL");
        assert_eq!(sniff(&apng), None);
    }

    #[test]
    fn small_images_pass_unchanged_and_big_ones_shrink_with_a_scale_hint() {
        let small = png(10, 10);
        let p = prepare(&small, "image/png", true).unwrap();
        assert_eq!(p.data, b64(&small));
        assert!(p.hints.is_empty());
        let big = png(2400, 600);
        let p = prepare(&big, "image/png", true).unwrap();
        assert_eq!(
            p.hints,
            vec!["[Image: original 2400x600, displayed at 2000x500. Multiply coordinates by 1.20 to map to original image.]"]
        );
    }

    #[test]
    fn bmp_becomes_png_and_garbage_is_omitted() {
        let mut bmp = Vec::new();
        DynamicImage::new_rgb8(3, 3)
            .write_to(&mut Cursor::new(&mut bmp), ImageFormat::Bmp)
            .unwrap();
        assert_eq!(sniff(&bmp), Some("image/bmp"));
        let p = prepare(&bmp, "image/bmp", true).unwrap();
        assert_eq!(p.mime_type, "image/png");
        assert_eq!(
            p.hints,
            vec!["[Image converted from image/bmp to image/png.]"]
        );
        assert_eq!(
            prepare(b"\x89PNG\r\n\x1a\nbroken", "image/png", true),
            Err(Omitted(CANNOT_CONVERT))
        );
    }
}

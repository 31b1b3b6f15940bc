//! How an image content block is drawn in the transcript (DECISIONS §23.122): one dim line
//! `[image: image/png 1024×768, 55 KB]`. The dimensions come from the image's header alone
//! (the `image` crate reads it without decoding pixels), and only the first few KB of the
//! base64 data are decoded for it, so a resumed session full of screenshots stays quick.

use std::io::Cursor;

use arbor_ai::ImageContent;
use base64::Engine;

/// Base64 characters decoded to find the header (12 KiB of image bytes); enough for PNG, GIF,
/// WebP, BMP and JPEG files without a large EXIF block before their frame header.
const HEADER_B64: usize = 16 * 1024;

/// The bytes `data` (standard base64) decodes to, without decoding it.
fn decoded_len(data: &str) -> usize {
    let data = data.trim_end();
    let pad = data.bytes().rev().take_while(|&b| b == b'=').count().min(2);
    (data.len() / 4 * 3 + (data.len() % 4).saturating_sub(1)).saturating_sub(pad)
}

/// Width and height from the image's header; `None` when the data is not a readable image.
/// A JPEG whose frame header lies beyond the first 16 KiB of base64 is read again
/// from all its bytes (still no pixel decoding).
pub fn dimensions(data: &str) -> Option<(u32, u32)> {
    let engine = base64::engine::general_purpose::STANDARD;
    let read = |bytes: &[u8]| {
        image::ImageReader::new(Cursor::new(bytes))
            .with_guessed_format()
            .ok()?
            .into_dimensions()
            .ok()
    };
    let data = data.trim();
    if data.len() > HEADER_B64 {
        if let Ok(head) = engine.decode(&data.as_bytes()[..HEADER_B64]) {
            if let Some(d) = read(&head) {
                return Some(d);
            }
        }
    }
    read(&engine.decode(data).ok()?)
}

/// `812 B`, `55 KB`, `1.4 MB` (powers of 1024).
pub fn human_size(bytes: usize) -> String {
    const KB: usize = 1024;
    if bytes < KB {
        format!("{bytes} B")
    } else if bytes < KB * KB {
        format!("{} KB", (bytes + KB / 2) / KB)
    } else {
        format!("{:.1} MB", bytes as f64 / (KB * KB) as f64)
    }
}

/// The transcript line for one image block.
pub fn label(image: &ImageContent) -> String {
    let size = human_size(decoded_len(&image.data));
    let mime = if image.mime_type.is_empty() {
        "image"
    } else {
        image.mime_type.as_str()
    };
    match dimensions(&image.data) {
        Some((w, h)) => format!("[image: {mime} {w}×{h}, {size}]"),
        None => format!("[image: {mime}, {size}, unreadable]"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(w: u32, h: u32) -> String {
        let img = image::RgbImage::from_pixel(w, h, image::Rgb([200, 10, 10]));
        let mut out = Vec::new();
        img.write_to(&mut Cursor::new(&mut out), image::ImageFormat::Png)
            .unwrap();
        base64::engine::general_purpose::STANDARD.encode(out)
    }

    fn content(data: String, mime: &str) -> ImageContent {
        ImageContent {
            data,
            mime_type: mime.into(),
            ..Default::default()
        }
    }

    #[test]
    fn labels_name_type_dimensions_and_size() {
        let data = png(1024, 768);
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&data)
            .unwrap()
            .len();
        assert_eq!(decoded_len(&data), bytes);
        let l = label(&content(data, "image/png"));
        assert_eq!(
            l,
            format!("[image: image/png 1024×768, {}]", human_size(bytes))
        );
    }

    #[test]
    fn large_images_are_read_from_their_header() {
        // Noise does not compress: the file is far larger than the header prefix.
        let img = image::RgbImage::from_fn(300, 200, |x, y| {
            image::Rgb([
                (x * 7 % 256) as u8,
                (y * 13 % 256) as u8,
                ((x ^ y) % 256) as u8,
            ])
        });
        let mut out = Vec::new();
        img.write_to(&mut Cursor::new(&mut out), image::ImageFormat::Png)
            .unwrap();
        assert!(out.len() > HEADER_B64);
        let data = base64::engine::general_purpose::STANDARD.encode(&out);
        assert_eq!(dimensions(&data), Some((300, 200)));
    }

    #[test]
    fn a_jpeg_with_a_large_exif_block_is_read_from_all_its_bytes() {
        let img = image::RgbImage::from_pixel(40, 30, image::Rgb([1, 2, 3]));
        let mut jpeg = Vec::new();
        img.write_to(&mut Cursor::new(&mut jpeg), image::ImageFormat::Jpeg)
            .unwrap();
        // An APP1 segment of 30,000 bytes right after SOI pushes the frame header past the
        // decoded prefix.
        let len: u16 = 30_000;
        let mut app1 = vec![0xFF, 0xE1];
        app1.extend_from_slice(&len.to_be_bytes());
        app1.extend(std::iter::repeat_n(0u8, usize::from(len) - 2));
        let mut file = jpeg[..2].to_vec();
        file.extend_from_slice(&app1);
        file.extend_from_slice(&jpeg[2..]);
        let data = base64::engine::general_purpose::STANDARD.encode(&file);
        let head = base64::engine::general_purpose::STANDARD
            .decode(&data.as_bytes()[..HEADER_B64])
            .unwrap();
        assert!(
            image::ImageReader::new(Cursor::new(&head))
                .with_guessed_format()
                .unwrap()
                .into_dimensions()
                .is_err(),
            "the prefix alone must not be enough for this test"
        );
        assert_eq!(dimensions(&data), Some((40, 30)));
    }

    #[test]
    fn unreadable_data_still_gets_a_line() {
        let l = label(&content("bm90IGFuIGltYWdl".into(), "image/jpeg"));
        assert_eq!(l, "[image: image/jpeg, 12 B, unreadable]");
        assert_eq!(
            label(&content("***".into(), "")),
            "[image: image, 2 B, unreadable]"
        );
    }

    #[test]
    fn sizes_read_like_a_file_manager() {
        assert_eq!(human_size(812), "812 B");
        assert_eq!(human_size(56_320), "55 KB");
        assert_eq!(human_size(3 * 1024 * 1024 / 2), "1.5 MB");
    }
}

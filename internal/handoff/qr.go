package handoff

import (
	"github.com/skip2/go-qrcode"
)

// QRSize is the side of a QR code image, in pixels.
const QRSize = 256

// QR is link as a QR code, a PNG image. Medium error correction (15 %)
// survives a phone camera's glare on a laptop screen; a link with a
// 43-character token fits in a version 5 code.
func QR(link string) ([]byte, error) {
	return qrcode.Encode(link, qrcode.Medium, QRSize)
}

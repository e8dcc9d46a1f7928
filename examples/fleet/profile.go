package fleet

import (
	"math"
	"time"
)

// dailyProfile is the normalised time-of-day shape of LLM request traffic,
// one value per 10-minute slot starting at 00:00 (144 slots).
//
// It was derived from Alibaba ServeGen's aggregate request rate of the
// m-large language workload (aggregate_rate_language_m-large.csv: 2016
// 600-second windows over 14 days, https://github.com/alibaba/ServeGen,
// Apache-2.0; see NOTICE): slot k is the mean over the 14 days of the rate in
// window d·144+k, divided by the mean rate over all windows (195.84 req/s),
// rounded to 4 decimals. The trace's t_seconds = 0 is taken as 00:00 UTC.
var dailyProfile = [144]float64{
	1.0525, 1.0314, 0.9376, 0.9173, 1.0000, 1.0277, 1.0445, 0.9962, // 00:00
	0.9836, 0.9676, 1.0180, 1.0036, 1.0177, 1.0568, 0.9920, 0.9614, // 01:20
	0.9866, 0.8993, 0.9222, 0.9527, 0.9975, 0.8690, 0.9127, 0.9595, // 02:40
	0.9063, 0.8830, 0.8703, 0.9353, 0.9471, 0.9043, 0.8430, 0.8748, // 04:00
	0.9012, 0.8721, 0.9170, 0.8890, 0.8899, 0.8334, 0.8362, 0.8642, // 05:20
	0.8627, 0.8347, 0.8561, 0.8312, 0.7863, 0.8517, 0.7956, 0.7838, // 06:40
	0.8239, 0.8122, 0.7841, 0.7983, 0.7700, 0.7391, 0.8080, 0.8059, // 08:00
	0.8382, 0.8955, 0.9248, 0.9340, 0.9664, 0.9826, 1.0156, 1.1142, // 09:20
	1.0991, 1.0961, 1.1492, 1.1344, 1.1167, 1.1282, 1.0752, 1.0323, // 10:40
	1.0052, 0.9581, 0.9411, 0.9865, 1.0023, 0.9342, 0.9769, 0.9967, // 12:00
	0.9632, 0.9717, 0.9894, 0.9903, 1.0210, 1.0302, 1.0152, 1.0923, // 13:20
	1.0736, 1.0479, 1.0292, 1.0145, 1.0537, 1.1061, 1.0493, 1.0278, // 14:40
	1.1314, 1.0918, 1.0307, 1.1085, 1.1216, 1.1728, 1.0719, 1.0903, // 16:00
	1.0437, 1.1111, 1.0878, 1.0657, 0.9645, 0.9286, 0.9427, 1.1301, // 17:20
	1.1505, 1.1264, 1.0966, 1.2049, 1.1830, 1.2492, 1.0629, 1.0603, // 18:40
	1.0976, 1.2249, 1.1257, 1.2192, 1.1200, 1.0121, 0.9617, 1.0365, // 20:00
	1.0436, 1.1857, 1.1502, 1.0679, 1.1527, 1.1351, 1.1539, 1.1256, // 21:20
	1.0299, 1.0181, 1.0500, 1.0804, 1.0441, 1.0747, 1.1660, 1.1005, // 22:40
}

// profileHarmonics is how many daily harmonics of dailyProfile the smoothed
// shape keeps: 4 keeps every feature longer than 6 h and drops the
// slot-to-slot jitter of a 14-day mean, which would otherwise show up as
// steps in latency.
const profileHarmonics = 4

// dayShape is the smoothed daily profile: a truncated Fourier series of
// dailyProfile, evaluated at any time of day (it interpolates the 10-minute
// table to any step without kinks).
type dayShape struct {
	a, b [profileHarmonics + 1]float64
}

func newDayShape() dayShape {
	var s dayShape
	n := float64(len(dailyProfile))
	for k := 0; k <= profileHarmonics; k++ {
		for j, v := range dailyProfile {
			w := 2 * math.Pi * float64(k*j) / n
			s.a[k] += v * math.Cos(w) * 2 / n
			s.b[k] += v * math.Sin(w) * 2 / n
		}
	}
	return s
}

// at returns the traffic level (mean 1) at unix millisecond t. Slot k of the
// table is centred on k·10 min + 5 min.
func (s dayShape) at(t int64) float64 {
	const day = int64(24 * time.Hour / time.Millisecond)
	ms := ((t % day) + day) % day
	slot := (float64(ms) - 5*60e3) / 600e3
	v := s.a[0] / 2
	for k := 1; k <= profileHarmonics; k++ {
		w := 2 * math.Pi * float64(k) * slot / float64(len(dailyProfile))
		v += s.a[k]*math.Cos(w) + s.b[k]*math.Sin(w)
	}
	return v
}

// weekFactor returns the traffic factor of the day of the week at unix
// millisecond t: 1 on weekdays, weekendLevel on Saturday and Sunday (UTC),
// with smooth 6-hour transitions centred on midnight.
func weekFactor(t int64) float64 {
	const weekendLevel = 0.8
	// 1970-01-01 was a Thursday; hours since the Monday before it.
	h := float64(t)/3.6e6 + 3*24
	h = math.Mod(h, 168)
	if h < 0 {
		h += 168
	}
	var s float64 // 1 on the weekend, 0 on weekdays
	if h < 84 {
		s = 1 - ramp(h)
	} else {
		s = ramp(h-120) - ramp(h-168)
	}
	return 1 - (1-weekendLevel)*s
}

// ramp rises smoothly from 0 at x = -3 to 1 at x = +3.
func ramp(x float64) float64 { return smoothstep((x + 3) / 6) }

// smoothstep is 0 below 0, 1 above 1 and 3x²-2x³ in between.
func smoothstep(x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	return x * x * (3 - 2*x)
}

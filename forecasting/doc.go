// Package forecasting makes short-horizon traffic forecasts with calibrated
// prediction intervals, for request rates and per-step request counts.
//
// Everything here is pure: functions and types over slices of samples, with
// no I/O, no clock and no global state; time comes in as an argument.
// Forecasts are causal: a forecast from origin i depends on data[0..i] only.
//
// Models (see [Models]):
//
//   - baselines: naive (last value), seasonal_naive (value one period ago),
//     drift (line through the first and last points), mean (mean of the last
//     period);
//   - Holt–Winters with additive or multiplicative daily seasonality, an
//     optional damped trend, and a variant on the log1p scale; the smoothing
//     parameters are fitted by Nelder–Mead on the one-step squared error;
//   - double seasonal Holt–Winters (Taylor 2003): a level with a damped
//     trend, a daily season and a weekly one of seven periods, and an
//     adjustment for the autocorrelation of the one-step errors, on the
//     data's scale (hw_weekly) or the log1p scale (hw_weekly_log). It needs
//     two weeks of history, which a Forecaster keeps only with
//     [Options.Weekly] (or when the model is named): auto offers it as a
//     candidate once the history holds two weeks and a validation window;
//   - robust: a seasonal profile of medians with a clipped, smoothed level
//     correction, for spiky or low-count traffic;
//   - revert: short-term mean reversion, the last value pulled toward the
//     means of the last 3, 6 and 12 points plus a share of the daily
//     profile's slope, with the pulls fitted per lead by Huber-reweighted
//     ridge least squares (not among auto's candidates: on the ServeGen
//     traces it adds selection noise and no accuracy);
//   - auto: picks per series, by rolling-origin validation on the most recent
//     history, the candidate with the lowest mean absolute error at the
//     horizon, or the equal-weight combination of the two or three best
//     candidates (named like "combo(naive+ses)") when that validates better.
//
// The point forecast at a lead is the model's, moved by the median of its
// recent errors at that lead when that median is more than three standard
// errors from zero (the mean absolute error is smallest at the median).
// A zero more than twice as far below the lead-1 forecast as its lower
// bound starts an outage: while the samples stay zero the point forecast is
// zero and the interval reaches up to the model's usual forecast.
//
// Every forecast carries, for each lead 1..H, a mean and an interval at the
// requested level whose bounds are split-conformal quantiles of the model's
// own recent n out-of-sample errors at that lead, the ⌈(n+1)(1+L)/2⌉-th and
// ⌊(n+1)(1−L)/2⌋-th smallest (a scaled σ√h while there are too few), the expected peak over the horizon and its upper bound. Rates are
// never forecast below zero. At each of Options.PlanLevels it also carries
// the upper bound the same errors give at that level (Forecast.Plans): a
// capacity plan at a higher quantile than the interval published, from
// the same forecaster.
//
// [Forecaster] is the streaming form (Fit once, Update in O(1) per sample,
// Refit when [Forecaster.RefitDue] says so); [Backtest] replays a series
// through it and compares it with the baselines on the same origins.
package forecasting

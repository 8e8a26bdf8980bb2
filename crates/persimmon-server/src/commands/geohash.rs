//! The geohash maths under the GEO commands (`geo.rs`): a position is the
//! sorted-set score of a 52-bit interleaved geohash, as Redis keeps it.
//!
//! A position is cut into `2^step` rows of latitude (-85.05112878 to
//! 85.05112878, the Web Mercator limits) and `2^step` columns of longitude
//! (-180 to 180); a cell's bits interleave the two indexes, longitude in
//! the odd bits and latitude in the even ones, so that the cells of a
//! coarser step are the aligned score ranges of the finer one. A stored
//! position is the cell of step 26 (52 bits, an exact double), and reads
//! back as the centre of that cell.
//!
//! A search (`Shape::cells`) picks a step at which the shape spans about a
//! cell, the cell of its centre and that cell's 8 neighbours (dropping the
//! ones the shape's bounding box cannot reach); each is one score range of
//! the sorted set, whose members are then filtered by exact distance
//! (`Shape::distance_if_inside`).
//!
//! Invariants: every figure is computed as Redis 7.0.15 computes it, in
//! the same order of floating-point operations and with the same libm
//! functions, so that scores, decoded positions, distances and the cells
//! searched agree with redis-server's to the bit (the replies depend on
//! it: the order of unsorted results is the order of the cells and of the
//! scores within each); distances are haversine on a sphere of radius
//! 6372797.560856 m; nothing here panics on any input (out-of-range
//! coordinates are refused by `encode`, any score decodes to something).

/// The step of a stored position: 26 bits of longitude, 26 of latitude.
pub const STEP_MAX: u8 = 26;

pub const LON_MIN: f64 = -180.0;
pub const LON_MAX: f64 = 180.0;
pub const LAT_MIN: f64 = -85.05112878;
pub const LAT_MAX: f64 = 85.05112878;

/// The Earth's radius in metres that Redis's distances use.
pub const EARTH_RADIUS_M: f64 = 6372797.560856;

/// Half the Earth's circumference in Web Mercator metres: the step
/// estimate doubles a radius until it reaches it.
const MERCATOR_MAX: f64 = 20037726.37;

const DEG_TO_RAD: f64 = std::f64::consts::PI / 180.0;

fn deg_rad(deg: f64) -> f64 {
    deg * DEG_TO_RAD
}

fn rad_deg(rad: f64) -> f64 {
    rad / DEG_TO_RAD
}

/// An interval of degrees.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Span {
    pub min: f64,
    pub max: f64,
}

/// The longitudes every geohash here covers.
const LON_SPAN: Span = Span {
    min: LON_MIN,
    max: LON_MAX,
};

/// The latitudes of the scores (Web Mercator's).
const LAT_SPAN: Span = Span {
    min: LAT_MIN,
    max: LAT_MAX,
};

/// The latitudes of the standard geohash text (GEOHASH's reply).
const LAT_SPAN_STANDARD: Span = Span {
    min: -90.0,
    max: 90.0,
};

/// A cell: its interleaved bits at a step (`2 * step` bits; a coordinate
/// at the very top of its range sets one bit more, as in Redis).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cell {
    pub bits: u64,
    pub step: u8,
}

/// The longitudes and latitudes a cell covers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Area {
    pub lon: Span,
    pub lat: Span,
}

/// Spreads the 32 bits of `v` to the even bits of a u64.
fn spread(v: u32) -> u64 {
    let mut x = v as u64;
    x = (x | (x << 16)) & 0x0000_ffff_0000_ffff;
    x = (x | (x << 8)) & 0x00ff_00ff_00ff_00ff;
    x = (x | (x << 4)) & 0x0f0f_0f0f_0f0f_0f0f;
    x = (x | (x << 2)) & 0x3333_3333_3333_3333;
    (x | (x << 1)) & 0x5555_5555_5555_5555
}

/// Gathers the even bits of `x` into a u32 (`spread`'s inverse).
fn gather(x: u64) -> u32 {
    let mut x = x & 0x5555_5555_5555_5555;
    x = (x | (x >> 1)) & 0x3333_3333_3333_3333;
    x = (x | (x >> 2)) & 0x0f0f_0f0f_0f0f_0f0f;
    x = (x | (x >> 4)) & 0x00ff_00ff_00ff_00ff;
    x = (x | (x >> 8)) & 0x0000_ffff_0000_ffff;
    (x | (x >> 16)) as u32
}

impl Cell {
    fn from_indexes(lat: u32, lon: u32, step: u8) -> Cell {
        Cell {
            bits: spread(lat) | (spread(lon) << 1),
            step,
        }
    }

    /// The row (latitude) and column (longitude) indexes.
    fn indexes(self) -> (u32, u32) {
        (gather(self.bits), gather(self.bits >> 1))
    }

    /// The cell `dlon` columns east and `dlat` rows north (each -1, 0 or
    /// 1), wrapping around at the edges of the grid; a coordinate that
    /// does not move keeps its bits.
    fn moved(self, dlon: i32, dlat: i32) -> Cell {
        let (lat, lon) = self.indexes();
        let mask = ((1u64 << self.step) - 1) as u32;
        let shift = |v: u32, d: i32| match d {
            0 => v,
            d => v.wrapping_add(d as u32) & mask,
        };
        Cell::from_indexes(shift(lat, dlat), shift(lon, dlon), self.step)
    }

    /// The score range `[min, max)` the cell covers among step-26 scores.
    pub fn scores(self) -> (f64, f64) {
        let shift = 52 - 2 * self.step as u32;
        let min = self.bits << shift;
        let max = (self.bits + 1) << shift;
        (min as f64, max as f64)
    }
}

/// The cell of step `step` holding (`lon`, `lat`) within the ranges given;
/// `None` for a coordinate outside the Web Mercator limits or the ranges.
fn encode(lon: f64, lat: f64, lon_span: Span, lat_span: Span, step: u8) -> Option<Cell> {
    let within = |x: f64, min: f64, max: f64| x >= min && x <= max;
    if !within(lon, LON_MIN, LON_MAX)
        || !within(lat, LAT_MIN, LAT_MAX)
        || !within(lon, lon_span.min, lon_span.max)
        || !within(lat, lat_span.min, lat_span.max)
    {
        return None;
    }
    let cells = (1u64 << step) as f64;
    let lat_offset = (lat - lat_span.min) / (lat_span.max - lat_span.min) * cells;
    let lon_offset = (lon - lon_span.min) / (lon_span.max - lon_span.min) * cells;
    // Truncation, as a C conversion to a 32-bit unsigned integer.
    Some(Cell::from_indexes(
        lat_offset as u32,
        lon_offset as u32,
        step,
    ))
}

/// The cell of (`lon`, `lat`) at `step` in the scores' grid.
fn encode_wgs84(lon: f64, lat: f64, step: u8) -> Option<Cell> {
    encode(lon, lat, LON_SPAN, LAT_SPAN, step)
}

/// What `cell` covers in the scores' grid.
fn decode(cell: Cell) -> Area {
    let (lat, lon) = cell.indexes();
    let cells = (1u64 << cell.step) as f64;
    let lat_scale = LAT_SPAN.max - LAT_SPAN.min;
    let lon_scale = LON_SPAN.max - LON_SPAN.min;
    let at = |i: u32, min: f64, scale: f64| min + (i as f64 / cells) * scale;
    Area {
        lat: Span {
            min: at(lat, LAT_SPAN.min, lat_scale),
            max: at(lat.wrapping_add(1), LAT_SPAN.min, lat_scale),
        },
        lon: Span {
            min: at(lon, LON_SPAN.min, lon_scale),
            max: at(lon.wrapping_add(1), LON_SPAN.min, lon_scale),
        },
    }
}

/// The centre of `area`, kept within the Web Mercator limits.
fn centre(area: Area) -> (f64, f64) {
    let lon = ((area.lon.min + area.lon.max) / 2.0).clamp(LON_MIN, LON_MAX);
    let lat = ((area.lat.min + area.lat.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    (lon, lat)
}

/// Whether a longitude and latitude can be stored or searched from.
pub fn valid(lon: f64, lat: f64) -> bool {
    (LON_MIN..=LON_MAX).contains(&lon) && (LAT_MIN..=LAT_MAX).contains(&lat)
}

/// The score of a position (`None`: outside the limits).
pub fn score(lon: f64, lat: f64) -> Option<f64> {
    encode_wgs84(lon, lat, STEP_MAX).map(|c| c.scores().0)
}

/// 2^63, where a double stops fitting a signed 64-bit integer.
const TWO_63: f64 = 9_223_372_036_854_775_808.0;

/// The 64 bits a score stands for: C's conversion of a double to an
/// unsigned 64-bit integer as x86-64 does it (through the signed one,
/// whose out-of-range result is 2^63), which is what Redis decodes; so a
/// score no GEOADD wrote still decodes to some position, as there.
fn score_bits(score: f64) -> u64 {
    const INDEFINITE: u64 = 1 << 63;
    if score.is_nan() {
        INDEFINITE
    } else if score < TWO_63 {
        // Below -2^63 this saturates to i64::MIN: the same 2^63.
        score as i64 as u64
    } else if score < 2.0 * TWO_63 {
        ((score - TWO_63) as i64 as u64) ^ INDEFINITE
    } else {
        0
    }
}

/// The position a score stands for: the centre of its step-26 cell.
pub fn position(score: f64) -> (f64, f64) {
    centre(decode(Cell {
        bits: score_bits(score),
        step: STEP_MAX,
    }))
}

/// The 11-character standard geohash of a score's position (latitudes
/// from -90 to 90; 52 bits make 10 characters and a last `0`).
pub fn hash_text(score: f64) -> [u8; 11] {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let (lon, lat) = position(score);
    let bits = encode(lon, lat, LON_SPAN, LAT_SPAN_STANDARD, STEP_MAX).map_or(0, |c| c.bits);
    let mut out = [b'0'; 11];
    for (i, ch) in out.iter_mut().take(10).enumerate() {
        *ch = ALPHABET[((bits >> (47 - 5 * i)) & 0x1f) as usize];
    }
    out
}

/// The distance in metres between two latitudes on one meridian.
fn lat_distance(lat1: f64, lat2: f64) -> f64 {
    EARTH_RADIUS_M * (deg_rad(lat2) - deg_rad(lat1)).abs()
}

/// The great-circle distance in metres between two positions (haversine).
pub fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let v = ((deg_rad(lon2) - deg_rad(lon1)) / 2.0).sin();
    if v == 0.0 {
        return lat_distance(lat1, lat2);
    }
    let (lat1r, lat2r) = (deg_rad(lat1), deg_rad(lat2));
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS_M * a.sqrt().asin()
}

/// What a search covers: a circle or a box around a centre, in a unit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Extent {
    Radius(f64),
    Box { width: f64, height: f64 },
}

/// A search shape: its centre, extent and the metres in one of its units.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shape {
    pub lon: f64,
    pub lat: f64,
    pub extent: Extent,
    pub to_meters: f64,
}

/// The step at which cells are about as wide as a radius (coarser near
/// the poles, where the meridians close in).
fn step_for_radius(mut meters: f64, lat: f64) -> u8 {
    if meters == 0.0 {
        return STEP_MAX;
    }
    let mut step: i32 = 1;
    while meters < MERCATOR_MAX {
        meters *= 2.0;
        step += 1;
    }
    step -= 2;
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, STEP_MAX as i32) as u8
}

/// The 8 neighbours of a cell, in the order a search visits them: north,
/// south, east, west, north-east, north-west, south-east, south-west.
fn neighbours(c: Cell) -> [Cell; 8] {
    [
        c.moved(0, 1),
        c.moved(0, -1),
        c.moved(1, 0),
        c.moved(-1, 0),
        c.moved(1, 1),
        c.moved(-1, 1),
        c.moved(1, -1),
        c.moved(-1, -1),
    ]
}

impl Shape {
    /// Half the height and half the width, in metres.
    fn half_extent_m(&self) -> (f64, f64) {
        match self.extent {
            Extent::Radius(r) => (self.to_meters * r, self.to_meters * r),
            Extent::Box { width, height } => (
                self.to_meters * (height / 2.0),
                self.to_meters * (width / 2.0),
            ),
        }
    }

    /// The bounding box `[min_lon, min_lat, max_lon, max_lat]`: the
    /// longitudes are taken at the latitude edge nearer the pole.
    fn bounds(&self) -> [f64; 4] {
        let (height, width) = self.half_extent_m();
        let lat_delta = rad_deg(height / EARTH_RADIUS_M);
        let lon_delta_top = rad_deg(width / EARTH_RADIUS_M / deg_rad(self.lat + lat_delta).cos());
        let lon_delta_bottom =
            rad_deg(width / EARTH_RADIUS_M / deg_rad(self.lat - lat_delta).cos());
        let lon_delta = if self.lat < 0.0 {
            lon_delta_bottom
        } else {
            lon_delta_top
        };
        [
            self.lon - lon_delta,
            self.lat - lat_delta,
            self.lon + lon_delta,
            self.lat + lat_delta,
        ]
    }

    /// The radius in metres that the step is chosen for (a box's
    /// half-diagonal).
    fn reach_m(&self) -> f64 {
        let r = match self.extent {
            Extent::Radius(r) => r,
            Extent::Box { width, height } => {
                ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt()
            }
        };
        r * self.to_meters
    }

    /// The cells to search, in order, each once: the centre's cell, then
    /// those of its neighbours that the bounding box reaches (a neighbour
    /// equal to the one searched just before it is skipped, as wide
    /// searches make neighbours coincide).
    pub fn cells(&self) -> Vec<Cell> {
        let [min_lon, min_lat, max_lon, max_lat] = self.bounds();
        let mut step = step_for_radius(self.reach_m(), self.lat);
        let at = |step: u8| {
            // The centre is within the limits (checked when parsed).
            let c = encode_wgs84(self.lon, self.lat, step).unwrap_or(Cell { bits: 0, step });
            (c, neighbours(c), decode(c))
        };
        let (mut centre_cell, mut around, mut area) = at(step);
        // Near a cell's edge a neighbour may not reach the bounding box:
        // then one step coarser.
        let [north, south, east, west] = [around[0], around[1], around[2], around[3]].map(decode);
        let short = north.lat.max < max_lat
            || south.lat.min > min_lat
            || east.lon.max < max_lon
            || west.lon.min > min_lon;
        if step > 1 && short {
            step -= 1;
            (centre_cell, around, area) = at(step);
        }
        let mut wanted = [true; 8];
        if step >= 2 {
            // Neighbours beyond an edge of the centre cell that the box
            // does not cross are of no use.
            let drop = |wanted: &mut [bool; 8], which: [usize; 3]| {
                for i in which {
                    wanted[i] = false;
                }
            };
            if area.lat.min < min_lat {
                drop(&mut wanted, [1, 7, 6]);
            }
            if area.lat.max > max_lat {
                drop(&mut wanted, [0, 4, 5]);
            }
            if area.lon.min < min_lon {
                drop(&mut wanted, [3, 7, 5]);
            }
            if area.lon.max > max_lon {
                drop(&mut wanted, [2, 6, 4]);
            }
        }
        let mut out = vec![centre_cell];
        // The last neighbour searched (the centre never counts as one).
        let mut last: Option<Cell> = None;
        for (cell, _) in around.iter().zip(wanted).filter(|(_, w)| *w) {
            if last == Some(*cell) {
                continue;
            }
            out.push(*cell);
            last = Some(*cell);
        }
        out
    }

    /// The distance in metres from the centre to (`lon`, `lat`) when that
    /// point is inside the shape (the edge included).
    pub fn distance_if_inside(&self, lon: f64, lat: f64) -> Option<f64> {
        match self.extent {
            Extent::Radius(r) => {
                let d = distance(self.lon, self.lat, lon, lat);
                // Only a distance known to be greater is out: NaN passes,
                // as in Redis.
                match d.partial_cmp(&(r * self.to_meters)) {
                    Some(std::cmp::Ordering::Greater) => None,
                    _ => Some(d),
                }
            }
            Extent::Box { width, height } => {
                let (width_m, height_m) = (width * self.to_meters, height * self.to_meters);
                if lat_distance(lat, self.lat) > height_m / 2.0 {
                    return None;
                }
                if distance(lon, lat, self.lon, lat) > width_m / 2.0 {
                    return None;
                }
                Some(distance(self.lon, self.lat, lon, lat))
            }
        }
    }
}

/// A distance as Redis replies it: rounded to 4 decimals (the value times
/// 10^4 rounded to an integer, half to even) and written with all 4.
pub fn distance_text(d: f64) -> String {
    let scaled = (d * 10000.0).round_ties_even();
    // C's llrint gives the "indefinite" integer for NaN and out of range.
    let v: i64 = if scaled.is_nan() || scaled.abs() >= TWO_63 {
        i64::MIN
    } else {
        scaled as i64
    };
    let sign = if v < 0 { "-" } else { "" };
    let u = v.unsigned_abs();
    format!("{sign}{}.{:04}", u / 10000, u % 10000)
}

/// A coordinate as Redis replies it: 17 decimals, then no trailing zeros
/// (nor a point left alone); `-0` is `0`.
pub fn coordinate_text(x: f64) -> String {
    let text = format!("{x:.17}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        &text
    };
    if text == "-0" {
        "0".to_string()
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleaving_round_trips() {
        for v in [0u32, 1, 0x2aaa_aaaa, 0x0355_5555, u32::MAX, 0x0400_0000] {
            assert_eq!(gather(spread(v)), v);
            let c = Cell::from_indexes(v, v.rotate_left(7), 26);
            assert_eq!(c.indexes(), (v, v.rotate_left(7)));
        }
        // Longitude in the odd bits, latitude in the even ones.
        assert_eq!(Cell::from_indexes(1, 0, 1).bits, 0b01);
        assert_eq!(Cell::from_indexes(0, 1, 1).bits, 0b10);
    }

    #[test]
    fn scores_and_positions_match_redis() {
        // Figures from redis-server 7.0.15 (GEOADD then ZSCORE, GEOPOS).
        assert_eq!(score(-73.9454966, 40.747533), Some(1791875804419201.0));
        assert_eq!(score(-74.0131604, 40.7126674), Some(1791873972053020.0));
        assert_eq!(score(180.0, LAT_MAX), Some(13510798882111488.0));
        assert_eq!(score(-180.0, LAT_MIN), Some(0.0));
        assert_eq!(score(180.1, 0.0), None);
        assert_eq!(score(0.0, 85.06), None);
        let (lon, lat) = position(1791895905559723.0);
        assert_eq!(coordinate_text(lon), "-73.78581315279006958");
        assert_eq!(coordinate_text(lat), "40.64289898154041936");
        let (lon, lat) = position(13510798882111488.0);
        assert_eq!(coordinate_text(lon), "180");
        assert_eq!(coordinate_text(lat), "85.0511287799999991");
        let (lon, lat) = position(0.0);
        assert_eq!(coordinate_text(lon), "-179.99999731779098511");
        assert_eq!(coordinate_text(lat), "-85.05112751263942528");
    }

    #[test]
    fn geohash_text_matches_redis() {
        let s = score(-5.6, 42.6).unwrap();
        assert_eq!(&hash_text(s), b"ezs42e44yx0");
        assert_eq!(&hash_text(13510798882111488.0), b"bp05b5048p0");
        assert_eq!(&hash_text(0.0), b"00bh0hbj200");
        assert_eq!(&hash_text(1791895905559723.0), b"dr5x0yyf1c0");
    }

    #[test]
    fn distances_round_as_redis_writes_them() {
        assert_eq!(distance_text(0.0), "0.0000");
        assert_eq!(distance_text(0.775), "0.7750");
        assert_eq!(distance_text(0.00005), "0.0000");
        // Exact halves go to the even neighbour (llrint of the product).
        assert_eq!(distance_text(0.03125), "0.0312");
        assert_eq!(distance_text(0.09375), "0.0938");
        assert_eq!(distance_text(166274.1516), "166274.1516");
        assert_eq!(distance_text(f64::NAN), "-922337203685477.5808");
        let (a, b) = (position(1791895905559723.0), position(1791875830079666.0));
        assert_eq!(
            distance_text(distance(a.0, a.1, b.0, b.1) / 1000.0),
            "17.4758"
        );
    }

    #[test]
    fn neighbours_wrap_around_the_grid() {
        let c = Cell::from_indexes(0, 0, 2);
        assert_eq!(c.moved(-1, 0).indexes(), (0, 3));
        assert_eq!(c.moved(0, -1).indexes(), (3, 0));
        assert_eq!(c.moved(1, 1).indexes(), (1, 1));
        // The extra top bit of a coordinate at its range's top moves away
        // with the coordinate, and stays when the other one moves.
        let top = Cell::from_indexes(4, 1, 2);
        assert_eq!(top.moved(0, 1).indexes(), (1, 1));
        assert_eq!(top.moved(1, 0).indexes(), (4, 2));
    }

    #[test]
    fn steps_follow_the_radius() {
        assert_eq!(step_for_radius(0.0, 0.0), 26);
        assert_eq!(step_for_radius(5_000_000.0, 0.0), 2);
        assert_eq!(step_for_radius(3000.0, 40.0), 12);
        assert_eq!(step_for_radius(3000.0, 70.0), 11);
        assert_eq!(step_for_radius(3000.0, -85.0), 10);
        assert_eq!(step_for_radius(1e9, 0.0), 1);
        assert_eq!(step_for_radius(0.001, 0.0), 26);
    }

    #[test]
    fn a_search_starts_at_the_centre_cell_and_never_panics() {
        let shape = Shape {
            lon: -73.9798091,
            lat: 40.7598464,
            extent: Extent::Radius(3.0),
            to_meters: 1000.0,
        };
        let cells = shape.cells();
        assert_eq!(
            cells[0],
            encode_wgs84(shape.lon, shape.lat, cells[0].step).unwrap()
        );
        assert!(cells.len() <= 9);
        for extent in [
            Extent::Radius(0.0),
            Extent::Radius(f64::INFINITY),
            Extent::Box {
                width: 1e12,
                height: 0.0,
            },
        ] {
            for (lon, lat) in [(180.0, LAT_MAX), (-180.0, LAT_MIN), (0.0, 0.0)] {
                let s = Shape {
                    lon,
                    lat,
                    extent,
                    to_meters: 1.0,
                };
                assert!(!s.cells().is_empty());
            }
        }
    }
}

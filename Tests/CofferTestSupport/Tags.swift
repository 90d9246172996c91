import Testing

extension Tag {
    /// A test that measures the product's real deadlines (a database away, a black hole, Apple hanging, a client
    /// trickling its request), or whose hundreds of durable writes need the cores to themselves: `scripts/test`
    /// runs these apart, two at a time (`scripts/tagged-tests timing`), never beside CPU-heavy suites.
    @Tag public static var timing: Self
    /// A long CPU sweep (the simulations' seeds, every route's absurd parameters, the store's random sequences):
    /// `scripts/test` runs these last, apart (`scripts/tagged-tests sweep`), so they starve no test waiting on
    /// PostgreSQL.
    @Tag public static var sweep: Self
}

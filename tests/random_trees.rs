//! Seeded random trees and patterns against the real rg (filled in below).

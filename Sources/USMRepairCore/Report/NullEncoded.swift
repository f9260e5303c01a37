/// Encodes an optional as `null` when it is nil, instead of leaving the key out (what synthesized
/// `Encodable` does): the JSON report keeps one shape, every key always present.
@propertyWrapper
public struct NullEncoded<Value: Encodable & Sendable>: Encodable, Sendable {
    /// The value, nil encoding as `null`.
    public var wrappedValue: Value?

    /// Wraps a value.
    public init(wrappedValue: Value?) { self.wrappedValue = wrappedValue }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue { try container.encode(wrappedValue) } else { try container.encodeNil() }
    }
}

extension NullEncoded: Equatable where Value: Equatable {}

//! A serializer that writes nothing and fails on a non-finite float.
//!
//! Hand-written because serde_json turns `NaN` and infinities into `null` without an error,
//! which would store a payload that does not round-trip; no maintained crate offers the check.
//! It walks the value only when the encoded text contains `null`, the one place a non-finite
//! float can hide, so ordinary payloads pay nothing.

use std::fmt::Display;

use serde::ser::{self, Serialize};

#[derive(Debug)]
pub(crate) struct NotFinite(pub(crate) String);

impl Display for NotFinite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotFinite {}

impl ser::Error for NotFinite {
    fn custom<T: Display>(msg: T) -> Self {
        NotFinite(msg.to_string())
    }
}

/// Fails when `value` holds a NaN or infinite float anywhere.
pub(crate) fn check<T: Serialize + ?Sized>(value: &T) -> Result<(), NotFinite> {
    value.serialize(Check)
}

struct Check;

fn float(v: f64) -> Result<(), NotFinite> {
    if v.is_finite() {
        Ok(())
    } else {
        Err(NotFinite(format!("{v} is not a finite number")))
    }
}

macro_rules! ok {
    ($($name:ident($ty:ty)),*) => {
        $(fn $name(self, _v: $ty) -> Result<(), NotFinite> { Ok(()) })*
    };
}

impl ser::Serializer for Check {
    type Ok = ();
    type Error = NotFinite;
    type SerializeSeq = Check;
    type SerializeTuple = Check;
    type SerializeTupleStruct = Check;
    type SerializeTupleVariant = Check;
    type SerializeMap = Check;
    type SerializeStruct = Check;
    type SerializeStructVariant = Check;

    ok!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_i128(i128),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_u128(u128),
        serialize_char(char),
        serialize_str(&str),
        serialize_bytes(&[u8]),
        serialize_unit_struct(&'static str)
    );

    fn serialize_f32(self, v: f32) -> Result<(), NotFinite> {
        float(f64::from(v))
    }
    fn serialize_f64(self, v: f64) -> Result<(), NotFinite> {
        float(v)
    }
    fn serialize_none(self) -> Result<(), NotFinite> {
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<(), NotFinite> {
        v.serialize(Check)
    }
    fn serialize_unit(self) -> Result<(), NotFinite> {
        Ok(())
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
    ) -> Result<(), NotFinite> {
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        v: &T,
    ) -> Result<(), NotFinite> {
        v.serialize(Check)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        v: &T,
    ) -> Result<(), NotFinite> {
        v.serialize(Check)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Check, NotFinite> {
        Ok(Check)
    }
    fn serialize_tuple(self, _: usize) -> Result<Check, NotFinite> {
        Ok(Check)
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Check, NotFinite> {
        Ok(Check)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Check, NotFinite> {
        Ok(Check)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Check, NotFinite> {
        Ok(Check)
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Check, NotFinite> {
        Ok(Check)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Check, NotFinite> {
        Ok(Check)
    }
}

macro_rules! compound {
    ($($trait:ident :: $method:ident),*) => {
        $(impl ser::$trait for Check {
            type Ok = ();
            type Error = NotFinite;
            fn $method<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), NotFinite> {
                v.serialize(Check)
            }
            fn end(self) -> Result<(), NotFinite> {
                Ok(())
            }
        })*
    };
}

compound!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl ser::SerializeMap for Check {
    type Ok = ();
    type Error = NotFinite;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> Result<(), NotFinite> {
        k.serialize(Check)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), NotFinite> {
        v.serialize(Check)
    }
    fn end(self) -> Result<(), NotFinite> {
        Ok(())
    }
}

macro_rules! fields {
    ($($trait:ident),*) => {
        $(impl ser::$trait for Check {
            type Ok = ();
            type Error = NotFinite;
            fn serialize_field<T: Serialize + ?Sized>(&mut self, _: &'static str, v: &T) -> Result<(), NotFinite> {
                v.serialize(Check)
            }
            fn end(self) -> Result<(), NotFinite> {
                Ok(())
            }
        })*
    };
}

fields!(SerializeStruct, SerializeStructVariant);

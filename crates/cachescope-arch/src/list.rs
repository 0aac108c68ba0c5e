//! A fixed-capacity list: what this crate returns where a `Vec` would need an allocator.

/// Up to `N` values of `T`, in insertion order. Pushing onto a full list drops the value and
/// reports it, so a caller never panics on unexpected input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct List<T: Copy, const N: usize> {
    items: [Option<T>; N],
    len: usize,
}

impl<T: Copy, const N: usize> Default for List<T, N> {
    fn default() -> Self {
        Self { items: [None; N], len: 0 }
    }
}

impl<T: Copy, const N: usize> List<T, N> {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends `v`; `Err(v)` when the list is full.
    pub fn push(&mut self, v: T) -> Result<(), T> {
        match self.items.get_mut(self.len) {
            Some(slot) => {
                *slot = Some(v);
                self.len += 1;
                Ok(())
            }
            None => Err(v),
        }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The values in order.
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.items[..self.len].iter().flatten()
    }

    /// The value at `i`.
    pub fn get(&self, i: usize) -> Option<&T> {
        self.items.get(i)?.as_ref()
    }

    /// The first value.
    pub fn first(&self) -> Option<&T> {
        self.get(0)
    }

    /// True when `v` is in the list.
    pub fn contains(&self, v: &T) -> bool
    where
        T: PartialEq,
    {
        self.iter().any(|x| x == v)
    }
}

impl<T: Copy + PartialEq, const N: usize, const M: usize> PartialEq<[T; M]> for List<T, N> {
    fn eq(&self, other: &[T; M]) -> bool {
        self.len == M && self.iter().zip(other).all(|(a, b)| a == b)
    }
}

impl<T: Copy, const N: usize> IntoIterator for List<T, N> {
    type Item = T;
    type IntoIter = core::iter::Flatten<core::iter::Take<core::array::IntoIter<Option<T>, N>>>;

    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter().take(self.len).flatten()
    }
}

impl<'a, T: Copy, const N: usize> IntoIterator for &'a List<T, N> {
    type Item = &'a T;
    type IntoIter = core::iter::Flatten<core::slice::Iter<'a, Option<T>>>;

    fn into_iter(self) -> Self::IntoIter {
        self.items[..self.len].iter().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_until_full() {
        let mut l: List<u8, 2> = List::new();
        assert!(l.is_empty());
        assert_eq!((l.push(1), l.push(2), l.push(3)), (Ok(()), Ok(()), Err(3)));
        assert_eq!(l.len(), 2);
        assert_eq!(l.iter().copied().collect::<std::vec::Vec<_>>(), [1, 2]);
        assert_eq!((&l).into_iter().count(), 2);
        assert_eq!(l.into_iter().sum::<u8>(), 3);
        assert_eq!((l.first(), l.get(1), l.get(2)), (Some(&1), Some(&2), None));
    }
}

package clockskew

// median returns the median of xs, reordering xs; for an even count it is the
// mean of the two middle values, rounded towards the lower one. 0 for none.
func median(xs []int64) int64 {
	n := len(xs)
	if n == 0 {
		return 0
	}
	k := n / 2
	hi := selectKth(xs, k)
	if n%2 == 1 {
		return hi
	}
	// selectKth left every value below index k no greater than xs[k].
	lo := xs[0]
	for _, x := range xs[1:k] {
		lo = max(lo, x)
	}
	return mid(lo, hi)
}

// mid is the mean of lo <= hi without overflow, rounded down.
func mid(lo, hi int64) int64 {
	return lo + int64(uint64(hi-lo)/2)
}

// selectKth reorders xs so that xs[k] is the value a sort would put there,
// with no greater value before it and no smaller after it (Hoare's
// quickselect, median-of-three pivots; expected linear time).
func selectKth(xs []int64, k int) int64 {
	lo, hi := 0, len(xs)-1
	for lo < hi {
		if hi-lo < 12 {
			insertionSort(xs[lo : hi+1])
			return xs[k]
		}
		m := lo + (hi-lo)/2
		// Order xs[lo], xs[m], xs[hi]; their median becomes the pivot.
		if xs[m] < xs[lo] {
			xs[m], xs[lo] = xs[lo], xs[m]
		}
		if xs[hi] < xs[lo] {
			xs[hi], xs[lo] = xs[lo], xs[hi]
		}
		if xs[hi] < xs[m] {
			xs[hi], xs[m] = xs[m], xs[hi]
		}
		pivot := xs[m]
		i, j := lo, hi
		for i <= j {
			for xs[i] < pivot {
				i++
			}
			for xs[j] > pivot {
				j--
			}
			if i <= j {
				xs[i], xs[j] = xs[j], xs[i]
				i++
				j--
			}
		}
		// Now xs[lo..j] <= pivot <= xs[i..hi], and xs[j+1..i-1] == pivot.
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return xs[k]
		}
	}
	return xs[k]
}

func insertionSort(xs []int64) {
	for i := 1; i < len(xs); i++ {
		for j := i; j > 0 && xs[j] < xs[j-1]; j-- {
			xs[j], xs[j-1] = xs[j-1], xs[j]
		}
	}
}

package report

import (
	"fmt"
	"math"
	"reflect"
	"strings"
)

// checkFinite returns an error naming the first number of r that is not
// finite (NaN or ±Inf), by its JSON path: a figure no format may print. The
// sources refuse the values that would make one (report/engine/check.go, report/source/ledger/check.go);
// this holds every format to it whatever source and analysis made r.
func checkFinite(r *Report) error {
	return finiteIn(reflect.ValueOf(r).Elem(), "report")
}

func finiteIn(v reflect.Value, path string) error {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("the report holds %v at %s: no format prints a figure that is not a number", f, path)
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return finiteIn(v.Elem(), path)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if err := finiteIn(v.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			if err := finiteIn(iter.Value(), fmt.Sprintf("%s[%v]", path, iter.Key())); err != nil {
				return err
			}
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				name = f.Name
			}
			if f.Anonymous {
				name = ""
			}
			if err := finiteIn(v.Field(i), strings.TrimSuffix(path+"."+name, ".")); err != nil {
				return err
			}
		}
	}
	return nil
}

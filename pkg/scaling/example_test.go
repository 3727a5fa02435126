package scaling_test

import (
	"fmt"

	"github.com/paddlepaddle/edl/pkg/scaling"
)

// A job with a global batch of 256 samples, measured at 1, 2 and 4
// trainers on one node: the fitted model up to 4, perfect scaling from 4
// up to 8, nothing more beyond.
func ExampleModel_Predict() {
	model, err := scaling.Fit([]scaling.Measurement{
		{Trainers: 1, Nodes: 1, LocalBatch: 256, StepTime: 1.10},
		{Trainers: 2, Nodes: 1, LocalBatch: 128, StepTime: 0.70, SyncTime: 0.10},
		{Trainers: 4, Nodes: 1, LocalBatch: 64, StepTime: 0.50, SyncTime: 0.15},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, trainers := range []int{1, 2, 4, 6, 8, 12} {
		p := model.Predict(trainers, 1, 256)
		fmt.Printf("%2d trainers: %3.0f samples/s, %.2fx (%s)\n", trainers, p.Throughput, p.Speedup, p.Basis)
	}
	fmt.Println(scaling.Model{}.Predict(6, 2, 256).Speedup, scaling.Model{}.Measured())
	// Output:
	//  1 trainers: 233 samples/s, 1.00x (fitted)
	//  2 trainers: 366 samples/s, 1.57x (fitted)
	//  4 trainers: 512 samples/s, 2.20x (fitted)
	//  6 trainers: 768 samples/s, 3.30x (optimistic)
	//  8 trainers: 1024 samples/s, 4.40x (optimistic)
	// 12 trainers: 1024 samples/s, 4.40x (capped)
	// 6 false
}
